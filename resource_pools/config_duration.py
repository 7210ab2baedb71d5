"""Go-style durations ("25s", "1m30s", "1.5h") as used in Determined's master config."""

from __future__ import annotations

import math
import re
from datetime import timedelta
from decimal import Decimal
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

_NANOS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 MICRO SIGN
    "μs": 1_000,  # U+03BC GREEK SMALL LETTER MU; Go accepts both spellings
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3_600 * 1_000_000_000,
}
# Longer units first so that "ms" is not read as "m" followed by a stray "s".
_UNIT_PATTERN = "|".join(sorted(map(re.escape, _NANOS_PER_UNIT), key=len, reverse=True))
_COMPONENT = re.compile(rf"(\d+\.?\d*|\.\d+)({_UNIT_PATTERN})")
_WHOLE = re.compile(rf"([+-]?)((?:{_COMPONENT.pattern})+)")

_HINT = "use a Go duration such as '25s', '1m30s' or '2h', or a number of seconds"


def parse_go_duration(value: object) -> timedelta:
    """Read a duration from a Go string ("1m30s"), a number of seconds, or a timedelta.

    Raises ValueError for anything else and for negative durations. Precision is one
    microsecond (Go keeps nanoseconds); finer parts are rounded.
    """
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration; {_HINT}")
    elif isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a duration; {_HINT}")
        result = timedelta(seconds=value)
    elif isinstance(value, str):
        result = _parse_go_string(value.strip())
    else:
        raise ValueError(f"{value!r} is not a duration; {_HINT}")
    if result < timedelta(0):
        raise ValueError(f"duration must not be negative, got {value!r}")
    return result


def _parse_go_string(text: str) -> timedelta:
    if text in {"0", "+0", "-0"}:
        return timedelta(0)
    match = _WHOLE.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a duration; {_HINT}")
    nanos = sum(
        Decimal(number) * _NANOS_PER_UNIT[unit] for number, unit in _COMPONENT.findall(match[2])
    )
    micros = round(nanos / 1_000)
    return timedelta(microseconds=-micros if match[1] == "-" else micros)


def format_go_duration(value: timedelta) -> str:
    """Write a duration the way Go's time.Duration.String does ("25s", "1m30s", "1h0m0s")."""
    micros = value // timedelta(microseconds=1)
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    if micros < 1_000:
        return f"{sign}{micros}µs"
    if micros < 1_000_000:
        return f"{sign}{_decimal(micros, 1_000)}ms"
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds = _decimal(rest, 1_000_000)
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{seconds}s"


def _decimal(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    width = len(str(unit)) - 1
    return f"{whole}.{fraction:0{width}d}".rstrip("0")


GoDuration = Annotated[
    timedelta,
    BeforeValidator(parse_go_duration),
    PlainSerializer(format_go_duration, return_type=str, when_used="json"),
]
"""A non-negative timedelta that reads Go duration strings and numbers of seconds, and
writes Go duration strings in JSON mode."""
