"""`det experiment create --config key=value` overrides.

Each override is ``dotted.key.path=value``. The value is read as YAML (a scalar or a flow
collection), so ``resources.slots_per_trial=2`` sets the integer 2, ``searcher.metric=loss`` the
string "loss", ``labels=[a,b]`` a list and ``description=`` null. Missing intermediate maps are
created. As in Determined's CLI, a mapping given for ``bind_mounts`` becomes a one-item list.
"""

from __future__ import annotations

import copy
from typing import Any

from .errors import ConfigIssue, ExperimentConfigError
from .models_base import type_name
from .yaml_source import load_yaml_value

_COERCE_TO_LIST = frozenset({"bind_mounts"})


def _bad(override: str, message: str, path: str = "") -> ExperimentConfigError:
    return ExperimentConfigError(ConfigIssue(path, f"invalid override {override!r}: {message}"))


def parse_override(override: str) -> tuple[list[str], Any]:
    """Split one override into its key path and parsed value."""
    if not isinstance(override, str):
        raise ExperimentConfigError(
            ConfigIssue("", f"invalid override {override!r}: expected a key=value string")
        )
    key, sep, raw = override.partition("=")
    if not sep:
        raise _bad(override, "no equals sign; expected key=value")
    key = key.strip()
    if not key:
        raise _bad(override, "empty key; expected key=value")
    parts = key.split(".")
    if any(not part.strip() for part in parts):
        raise _bad(override, f"empty part in key path {key!r}")
    parts = [part.strip() for part in parts]
    try:
        value = load_yaml_value(raw)
    except ExperimentConfigError as exc:
        detail = "; ".join(issue.message for issue in exc.issues)
        raise _bad(override, f"value is not valid YAML: {detail}", key) from None
    if key in _COERCE_TO_LIST and isinstance(value, dict):
        value = [value]
    return parts, value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Return a copy of `data` with every override applied in order."""
    out = copy.deepcopy(data)
    for override in overrides:
        parts, value = parse_override(override)
        node = out
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = {}
                node[part] = child
            elif not isinstance(child, dict):
                where = ".".join(parts[: depth + 1])
                raise _bad(
                    override,
                    f"{where} is a {type_name(child)}, not a mapping, so {'.'.join(parts)} "
                    "cannot be set",
                    where,
                )
            node = child
        node[parts[-1]] = value
    return out
