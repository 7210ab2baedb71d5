"""apply_overrides: `--config key=value` semantics."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.api.schemas.expconf import (
    ExperimentConfigError,
    apply_overrides,
    load_yaml_mapping,
    validate_experiment_config,
)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("resources.slots_per_trial=2", {"resources": {"slots_per_trial": 2}}),
        ("searcher.metric=loss", {"searcher": {"metric": "loss"}}),
        ("labels=[a,b]", {"labels": ["a", "b"]}),
        ("labels=[a, 'b c']", {"labels": ["a", "b c"]}),
        ("debug=true", {"debug": True}),
        ("debug=yes", {"debug": "yes"}),
        ("hyperparameters.lr=0.01", {"hyperparameters": {"lr": 0.01}}),
        ("hyperparameters.lr=1e-3", {"hyperparameters": {"lr": 0.001}}),
        ("description=", {"description": None}),
        ("description=null", {"description": None}),
        ("description='5'", {"description": "5"}),
        ("entrypoint=python3 train.py --x=1", {"entrypoint": "python3 train.py --x=1"}),
        ("data={a: 1, b: [x]}", {"data": {"a": 1, "b": ["x"]}}),
        (
            "bind_mounts={host_path: /a, container_path: /b}",
            {"bind_mounts": [{"host_path": "/a", "container_path": "/b"}]},
        ),
        (" resources . priority =3", {"resources": {"priority": 3}}),
    ],
)
def test_single_override(override: str, expected: dict) -> None:
    assert apply_overrides({}, [override]) == expected


def test_overrides_keep_other_keys_and_apply_in_order() -> None:
    data = {"name": "x", "resources": {"slots_per_trial": 1, "priority": 5}}
    out = apply_overrides(
        data, ["resources.slots_per_trial=4", "name=y", "resources.slots_per_trial=8"]
    )
    assert out == {"name": "y", "resources": {"slots_per_trial": 8, "priority": 5}}
    assert data == {"name": "x", "resources": {"slots_per_trial": 1, "priority": 5}}


def test_override_replaces_a_null_intermediate() -> None:
    assert apply_overrides({"resources": None}, ["resources.priority=3"]) == {
        "resources": {"priority": 3}
    }


def test_override_result_validates() -> None:
    data, _ = load_yaml_mapping("name: x\nentrypoint: e\nsearcher: {name: single, metric: m}\n")
    data = apply_overrides(data, ["resources.slots_per_trial=2", "labels=[a,b]"])
    cfg = validate_experiment_config(data)
    assert cfg.resources.slots_per_trial == 2
    assert cfg.labels == ["a", "b"]


@pytest.mark.parametrize(
    ("override", "fragment", "path"),
    [
        ("resources.slots_per_trial", "no equals sign", ""),
        ("=3", "empty key", ""),
        ("  =3", "empty key", ""),
        ("resources..priority=3", "empty part", ""),
        (".priority=3", "empty part", ""),
        ("priority.=3", "empty part", ""),
        ("name.first=x", "name is a string, not a mapping", "name"),
        ("labels.first=x", "labels is a list, not a mapping", "labels"),
        ("labels=[a, b", "value is not valid YAML", "labels"),
        ("data={a: 1, a: 2}", "duplicate key", "data"),
    ],
)
def test_bad_overrides_name_the_override(override: str, fragment: str, path: str) -> None:
    data = {"name": "n", "labels": ["a"]}
    with pytest.raises(ExperimentConfigError) as info:
        apply_overrides(data, ["debug=true", override])
    [issue] = info.value.issues
    assert repr(override) in issue.message
    assert fragment in issue.message
    assert issue.path == path


def test_non_string_override_is_rejected() -> None:
    with pytest.raises(ExperimentConfigError, match="key=value"):
        apply_overrides({}, [3])  # type: ignore[list-item]


# ----- properties -----------------------------------------------------------------------------

_SEGMENTS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
_PATHS = st.lists(_SEGMENTS, min_size=1, max_size=4)
_JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=10),
)
_JSON_VALUES = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_SEGMENTS, inner, max_size=3),
    max_leaves=8,
)


def _nest(path: list[str], value: Any) -> dict:
    out: Any = value
    for part in reversed(path):
        out = {part: out}
    return out


@settings(max_examples=300, deadline=None)
@given(path=_PATHS, value=_JSON_VALUES)
def test_json_values_round_trip(path: list[str], value: Any) -> None:
    override = ".".join(path) + "=" + json.dumps(value, ensure_ascii=False)
    assert apply_overrides({}, [override]) == _nest(path, value)


@settings(max_examples=200, deadline=None)
@given(
    base=st.dictionaries(_SEGMENTS, st.integers(), max_size=4),
    path=_PATHS,
    value=_JSON_VALUES,
)
def test_override_only_touches_its_path(base: dict, path: list[str], value: Any) -> None:
    original = copy.deepcopy(base)
    if path[0] in base and len(path) > 1:
        # an integer sits where a mapping is needed: the override must be refused
        with pytest.raises(ExperimentConfigError):
            apply_overrides(base, [".".join(path) + "=" + json.dumps(value, ensure_ascii=False)])
        return
    out = apply_overrides(base, [".".join(path) + "=" + json.dumps(value, ensure_ascii=False)])
    assert base == original
    expected = copy.deepcopy(base)
    expected[path[0]] = _nest(path[1:], value) if len(path) > 1 else value
    assert out == expected
