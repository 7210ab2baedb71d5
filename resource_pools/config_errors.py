"""Validation errors that point at the offending key, and a readable rendering of them."""

from __future__ import annotations

from typing import NoReturn

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

Loc = tuple[str | int, ...]
Problem = tuple[Loc, str, object]
"""One error: the key path, the reason in words, and the offending value."""


def raise_config_error(title: str, *problems: Problem) -> NoReturn:
    """Raise one ValidationError listing `problems`, each located at its key path.

    Raised inside a validator, pydantic prefixes the locations with the enclosing keys.
    """
    details = [
        InitErrorDetails(
            type=PydanticCustomError("resource_config", "{reason}", {"reason": reason}),
            loc=loc,
            input=value,
        )
        for loc, reason, value in problems
    ]
    raise ValidationError.from_exception_data(title, details)


def reraise_under(title: str, prefix: Loc, exc: ValidationError) -> NoReturn:
    """Raise the errors of a sub-validation again, with their locations moved under `prefix`."""
    problems = [(prefix + tuple(e["loc"]), _plain(e["msg"]), e["input"]) for e in exc.errors()]
    raise_config_error(title, *problems)


def format_config_errors(exc: ValidationError) -> list[str]:
    """One line per error, led by its key path: "resource_pools[1].pool_name: ..."."""
    return [f"{_format_loc(error['loc'])}: {_plain(error['msg'])}" for error in exc.errors()]


def _format_loc(loc: Loc) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path or "(top level)"


def _plain(message: str) -> str:
    return message.removeprefix("Value error, ")
