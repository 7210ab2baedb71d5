"""Reading searcher keys from an expanded config dict, with clear errors for bad values.

The expconf models validate user configs first; these checks keep the pure searchers safe when
they are handed a dict from elsewhere (a stored config, a test).
"""

from __future__ import annotations

from typing import Any

from .errors import SearcherConfigError

DEFAULT_MAX_CONCURRENT = 16


def config_int(config: dict[str, Any], key: str, default: int | None = None) -> int:
    value = config.get(key, default)
    if value is None:
        value = default
    if value is None:
        raise SearcherConfigError(f"searcher.{key} is required for the {config['name']} searcher")
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise SearcherConfigError(f"searcher.{key} must be an integer, got {value!r}")
    return int(value)


def config_bool(config: dict[str, Any], key: str, default: bool) -> bool:
    value = config.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise SearcherConfigError(f"searcher.{key} must be true or false, got {value!r}")
    return value


def config_str(config: dict[str, Any], key: str) -> str:
    value = config.get(key)
    if not isinstance(value, str) or not value:
        raise SearcherConfigError(
            f"searcher.{key} is required for the {config['name']} searcher (a metric name)"
        )
    return value


def concurrent(config: dict[str, Any]) -> int:
    value = config_int(config, "max_concurrent_trials", DEFAULT_MAX_CONCURRENT)
    if value < 0:
        raise SearcherConfigError("searcher.max_concurrent_trials must be >= 0")
    return value


def max_trials(config: dict[str, Any]) -> int:
    value = config_int(config, "max_trials")
    if value < 1:
        raise SearcherConfigError("searcher.max_trials must be at least 1")
    return value


def divisor(config: dict[str, Any]) -> float:
    value = config.get("divisor")
    if value is None:
        return 4.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 1:
        raise SearcherConfigError(f"searcher.divisor must be a number > 1, got {value!r}")
    return float(value)
