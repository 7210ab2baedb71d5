"""Validate raw config data into an `ExperimentConfig`, reporting issues by key path and line."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .errors import ConfigIssue, ExperimentConfigError, LineMap, issue_at, join_path
from .models_base import type_name
from .models_experiment import ExperimentConfig

_KEEP_MISSING_LEAF = {"missing", "expconf"}


def _is_tag(part: Any) -> bool:
    return isinstance(part, str) and part.startswith("<") and part.endswith(">")


def _child(data: Any, part: Any) -> tuple[bool, Any]:
    if isinstance(data, dict) and isinstance(part, str) and part in data:
        return True, data[part]
    is_index = isinstance(part, int) and not isinstance(part, bool)
    if isinstance(data, list) and is_index and 0 <= part < len(data):
        return True, data[part]
    return False, None


def user_path(data: Any, loc: tuple[Any, ...], error_type: str) -> list[str | int]:
    """Map a pydantic error location onto the user's key path.

    Pydantic adds union tags (``<random>``) and validator labels to locations; those are
    dropped by walking the location along the user's own data and keeping only the parts that
    exist there. The last part is kept even when absent for "missing" errors and our own
    errors, which name keys the user did not write.
    """
    path: list[str | int] = []
    current = data
    for index, part in enumerate(loc):
        found, value = _child(current, part)
        if found:
            path.append(part)
            current = value
            continue
        is_last = index == len(loc) - 1
        if is_last and error_type in _KEEP_MISSING_LEAF and not _is_tag(part):
            path.append(part)
    return path


def _message(error: dict[str, Any], path: str) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        key = path.rpartition(".")[2]
        return f"unknown key {key!r} (additional properties are not allowed)"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"Input should be a mapping, got {type_name(error.get('input'))}"
    message = str(error["msg"])
    if kind == "value_error" and message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if kind.endswith("_type") and "input" in error:
        message = f"{message}, got {type_name(error['input'])}"
    return message


def issues_from_validation_error(
    exc: ValidationError, data: Any, lines: LineMap | None
) -> list[ConfigIssue]:
    """Convert pydantic errors into deduplicated `ConfigIssue`s in the user's terms."""
    issues: list[ConfigIssue] = []
    seen: set[tuple[str, str]] = set()
    for error in exc.errors(include_url=False):
        path = join_path(user_path(data, tuple(error["loc"]), error["type"]))
        message = _message(error, path)
        if (path, message) in seen:
            continue
        seen.add((path, message))
        issues.append(issue_at(path, message, lines))
    return issues


def _absent(mapping: dict[str, Any], key: str) -> bool:
    return mapping.get(key) is None


def eventually_required_issues(
    data: dict[str, Any], lines: LineMap | None, *, managed: bool
) -> list[ConfigIssue]:
    """Keys that must be present once templates and defaults are applied (reference §5.1).

    checkpoint_storage is not checked here: the master fills it from its own default; nor is
    name: the master names an unnamed experiment "Experiment (<petname>)", as Determined.
    """
    issues: list[ConfigIssue] = []
    searcher = data.get("searcher")
    if searcher is None:
        issues.append(issue_at("searcher", "Field required: set a searcher with a metric", lines))
    elif isinstance(searcher, dict) and _absent(searcher, "metric"):
        issues.append(
            issue_at("searcher.metric", "Field required: the searcher needs a metric", lines)
        )
    if managed and _absent(data, "entrypoint"):
        issues.append(
            issue_at("entrypoint", "Field required: managed experiments need an entrypoint", lines)
        )
    return issues


def validate_experiment_config(
    data: dict[str, Any], lines: LineMap | None = None, *, managed: bool = True
) -> ExperimentConfig:
    """Validate a (merged) raw config. Raises `ExperimentConfigError` listing every issue.

    `managed` experiments (the master runs the trials) also need an entrypoint.
    """
    if not isinstance(data, dict):
        raise ExperimentConfigError(
            ConfigIssue("", f"an experiment config must be a mapping, got {type_name(data)}")
        )
    issues: list[ConfigIssue] = []
    config: ExperimentConfig | None = None
    try:
        config = ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        issues.extend(issues_from_validation_error(exc, data, lines))
    known = {(issue.path, issue.message) for issue in issues}
    for issue in eventually_required_issues(data, lines, managed=managed):
        if (issue.path, issue.message) not in known:
            issues.append(issue)
    if issues or config is None:
        raise ExperimentConfigError(issues)
    return config
