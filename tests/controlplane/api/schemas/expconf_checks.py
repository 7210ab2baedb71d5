"""Shared helpers for the expconf tests: validate YAML text and collect the issues it raises."""

from __future__ import annotations

import pytest

from controlplane.api.schemas.expconf import (
    ExperimentConfig,
    ExperimentConfigError,
    load_yaml_mapping,
    validate_experiment_config,
)


def validate(text: str, *, managed: bool = True) -> ExperimentConfig:
    data, lines = load_yaml_mapping(text)
    return validate_experiment_config(data, lines, managed=managed)


def issues(text: str, *, managed: bool = True) -> list[tuple[str, int | None, str]]:
    data, lines = load_yaml_mapping(text)
    with pytest.raises(ExperimentConfigError) as info:
        validate_experiment_config(data, lines, managed=managed)
    return [(issue.path, issue.line, issue.message) for issue in info.value.issues]


def one_issue(text: str) -> tuple[str, int | None, str]:
    found = issues(text)
    assert len(found) == 1, found
    return found[0]
