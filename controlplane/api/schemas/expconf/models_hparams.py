"""Hyperparameter definitions (reference §5.4).

A hyperparameter is one of const / int / double / log / categorical (a mapping with `type`), a
nested mapping without `type` (recursively), or a bare scalar or list, which is shorthand for
``{type: const, val: <value>}``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)
from typing_extensions import TypeAliasType

from .models_base import ConfigModel, config_error, fail_at

HYPERPARAMETER_TYPES = ("const", "int", "double", "log", "categorical")
_LOG_DOUBLE_MAX = math.log(sys.float_info.max)


class ConstHyperparameter(ConfigModel):
    """A fixed value."""

    type: Literal["const"] = Field(description="Always `const`.")
    val: Any = Field(default=None, description="The value given to every trial.")


def _check_range(model: Any) -> None:
    if model.minval > model.maxval:
        raise fail_at(
            [
                (
                    ("minval",),
                    f"minval ({model.minval}) must be less than or equal to maxval "
                    f"({model.maxval})",
                    model.minval,
                )
            ]
        )


class IntHyperparameter(ConfigModel):
    """An integer drawn uniformly from [minval, maxval]."""

    type: Literal["int"] = Field(description="Always `int`.")
    minval: int = Field(ge=-(2**63), le=2**63 - 1, description="Smallest value (inclusive).")
    maxval: int = Field(ge=-(2**63), le=2**63 - 1, description="Largest value (inclusive).")
    count: int | None = Field(default=None, ge=1, description="Grid points (grid search).")

    @model_validator(mode="after")
    def _range(self) -> IntHyperparameter:
        _check_range(self)
        return self


class DoubleHyperparameter(ConfigModel):
    """A float drawn uniformly from [minval, maxval)."""

    type: Literal["double"] = Field(description="Always `double`.")
    minval: float = Field(description="Smallest value.")
    maxval: float = Field(description="Largest value.")
    count: int | None = Field(default=None, ge=1, description="Grid points (grid search).")

    @model_validator(mode="after")
    def _range(self) -> DoubleHyperparameter:
        _check_range(self)
        return self


class LogHyperparameter(ConfigModel):
    """``base ** x`` with the exponent x drawn uniformly from [minval, maxval]."""

    type: Literal["log"] = Field(description="Always `log`.")
    minval: float = Field(description="Smallest exponent.")
    maxval: float = Field(description="Largest exponent.")
    base: float = Field(default=10.0, gt=0, description="Base of the logarithm (> 0).")
    count: int | None = Field(default=None, ge=1, description="Grid points (grid search).")

    @model_validator(mode="after")
    def _range(self) -> LogHyperparameter:
        _check_range(self)
        for name, exponent in (("minval", self.minval), ("maxval", self.maxval)):
            if exponent * math.log(self.base) >= _LOG_DOUBLE_MAX:
                raise fail_at(
                    [((name,), f"base ** {name} ({self.base} ** {exponent}) overflows", exponent)]
                )
        return self


class CategoricalHyperparameter(ConfigModel):
    """One of a list of values, chosen uniformly."""

    type: Literal["categorical"] = Field(description="Always `categorical`.")
    vals: list[Any] = Field(min_length=1, description="The candidate values (at least one).")


class _UnknownHyperparameter(ConfigModel):
    """Catches a mapping whose `type` is not a hyperparameter type, to name the problem."""

    model_config = ConfigDict(extra="allow")

    type: Any = Field(default=None, validate_default=True, description="The bad type.")

    @field_validator("type")
    @classmethod
    def _reject(cls, value: Any) -> Any:
        raise config_error(
            f"unknown hyperparameter type {value!r}; expected one of "
            + ", ".join(HYPERPARAMETER_TYPES)
        )


def _shorthand(value: Any) -> Any:
    """A bare scalar or list is a const hyperparameter."""
    if isinstance(value, dict | ConfigModel):
        return value
    return {"type": "const", "val": value}


def _hyperparameter_kind(value: Any) -> str:
    if isinstance(value, dict):
        if "type" not in value:
            return "<nested>"
        kind = value["type"]
        if isinstance(kind, str) and kind in HYPERPARAMETER_TYPES:
            return f"<{kind}>"
        return "<unknown>"
    if isinstance(value, ConfigModel):
        return f"<{value.type}>"
    return "<nested>"


Hyperparameter = TypeAliasType(
    "Hyperparameter",
    Annotated[
        Annotated[ConstHyperparameter, Tag("<const>")]
        | Annotated[IntHyperparameter, Tag("<int>")]
        | Annotated[DoubleHyperparameter, Tag("<double>")]
        | Annotated[LogHyperparameter, Tag("<log>")]
        | Annotated[CategoricalHyperparameter, Tag("<categorical>")]
        | Annotated[dict[str, "Hyperparameter"], Tag("<nested>")]
        | Annotated[_UnknownHyperparameter, Tag("<unknown>")],
        Discriminator(_hyperparameter_kind),
        BeforeValidator(_shorthand),
    ],
)
"""One hyperparameter definition, or a nested mapping of them."""

Hyperparameters = dict[str, Hyperparameter]

RangedHyperparameter = IntHyperparameter | DoubleHyperparameter | LogHyperparameter


def iter_leaves(
    hparams: dict[str, Any], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Yield (path, leaf) for every leaf hyperparameter, in sorted name order."""
    for name in sorted(hparams):
        value = hparams[name]
        if isinstance(value, dict):
            yield from iter_leaves(value, (*prefix, name))
        else:
            yield (*prefix, name), value


def grid_count_errors(hparams: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str, Any]]:
    """Errors for int/double/log hyperparameters without `count` when grid search is used."""
    return [
        (
            ("hyperparameters", *path, "count"),
            "grid search is in use but count was not provided",
            None,
        )
        for path, leaf in iter_leaves(hparams)
        if isinstance(leaf, RangedHyperparameter) and leaf.count is None
    ]


def _axis_size(leaf: Any) -> int:
    if isinstance(leaf, CategoricalHyperparameter):
        return len(leaf.vals)
    if isinstance(leaf, IntHyperparameter) and leaf.count is not None:
        return min(leaf.count, leaf.maxval - leaf.minval + 1)
    if isinstance(leaf, RangedHyperparameter) and leaf.count is not None:
        return leaf.count
    return 1


def grid_size(hparams: dict[str, Any]) -> int:
    """Points of the grid search over `hparams` (an empty nested map counts as one value)."""
    return math.prod(_axis_size(leaf) for _, leaf in iter_leaves(hparams))


def grid_size_errors(
    hparams: dict[str, Any], limit: int
) -> list[tuple[tuple[str | int, ...], str, Any]]:
    size = grid_size(hparams)
    if size <= limit:
        return []
    message = f"the grid has {size} points; at most {limit} are supported (lower the counts)"
    return [(("hyperparameters",), message, None)]
