"""expand_config: every default filled, as the master returns `experiment.config`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.api.schemas.expconf import (
    DEFAULT_IMAGE,
    ExperimentConfig,
    ExperimentConfigError,
    expand_config,
    load_yaml_mapping,
    validate_experiment_config,
)

MINIMAL = """\
name: mnist
entrypoint: python3 train.py
searcher:
  name: single
  metric: loss
"""

MASTER_STORAGE = {"type": "shared_fs", "host_path": "/tmp", "storage_path": "determined-checkpoint"}
NOW = 1_700_000_000


def _cfg(text: str) -> ExperimentConfig:
    data, lines = load_yaml_mapping(text)
    return validate_experiment_config(data, lines)


def _expand(text: str, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("master_checkpoint_storage", MASTER_STORAGE)
    kwargs.setdefault("now_seconds", NOW)
    return expand_config(_cfg(text), **kwargs)


EXPECTED_MINIMAL = {
    "name": "mnist",
    "description": None,
    "labels": [],
    "project": "",
    "workspace": "",
    "entrypoint": "python3 train.py",
    "hyperparameters": {},
    "searcher": {
        "name": "single",
        "metric": "loss",
        "smaller_is_better": True,
        "source_trial_id": None,
        "source_checkpoint_uuid": None,
    },
    "resources": {
        "slots_per_trial": 1,
        "max_slots": None,
        "weight": 1.0,
        "priority": None,
        "resource_pool": "",
        "is_single_node": None,
        "devices": [],
        "shm_size": None,
        "native_parallel": False,
        "agent_label": None,
    },
    "environment": {
        "image": {"cpu": DEFAULT_IMAGE, "cuda": DEFAULT_IMAGE, "rocm": DEFAULT_IMAGE},
        "environment_variables": {"cpu": [], "cuda": [], "rocm": []},
        "ports": {},
        "force_pull_image": False,
        "registry_auth": None,
        "add_capabilities": [],
        "drop_capabilities": [],
        "proxy_ports": [],
        "pod_spec": None,
    },
    "bind_mounts": [],
    "checkpoint_storage": {
        "type": "shared_fs",
        "host_path": "/tmp",
        "storage_path": "determined-checkpoint",
        "propagation": "rprivate",
        "container_path": None,
        "checkpoint_path": None,
        "tensorboard_path": None,
        "save_experiment_best": 0,
        "save_trial_best": 1,
        "save_trial_latest": 1,
    },
    "checkpoint_policy": "best",
    "max_restarts": 5,
    "min_validation_period": {"batches": 0},
    "min_checkpoint_period": {"batches": 0},
    "scheduling_unit": 100,
    "records_per_epoch": 0,
    "perform_initial_validation": False,
    "preemption_timeout": 3600,
    "profiling": {
        "enabled": False,
        "begin_on_batch": 0,
        "end_after_batch": None,
        "sync_timings": True,
    },
    "reproducibility": {"experiment_seed": NOW},
    "data": {},
    "debug": False,
    "log_policies": [],
    "retention_policy": None,
    "optimizations": {
        "aggregation_frequency": 1,
        "auto_tune_tensor_fusion": False,
        "average_aggregated_gradients": True,
        "average_training_metrics": False,
        "gradient_compression": False,
        "grad_updates_size_file": None,
        "mixed_precision": "O0",
        "tensor_fusion_threshold": 64,
        "tensor_fusion_cycle_time": 5,
    },
    "tensorboard_storage": None,
    "integrations": None,
    "security": None,
    "slurm": None,
    "pbs": None,
    "data_layer": None,
    "internal": None,
}


def test_minimal_config_expands_fully() -> None:
    out = _expand(MINIMAL)
    assert out == EXPECTED_MINIMAL
    assert json.loads(json.dumps(out)) == out


def test_seed_comes_from_now_unless_set() -> None:
    assert _expand(MINIMAL, now_seconds=12)["reproducibility"] == {"experiment_seed": 12}
    out = _expand(MINIMAL + "reproducibility: {experiment_seed: 5}\n", now_seconds=12)
    assert out["reproducibility"] == {"experiment_seed": 5}


def test_default_priority_applies_only_when_unset() -> None:
    assert _expand(MINIMAL, default_priority=42)["resources"]["priority"] == 42
    out = _expand(MINIMAL + "resources: {priority: 7}\n", default_priority=42)
    assert out["resources"]["priority"] == 7


def test_experiment_storage_wins_over_the_masters() -> None:
    out = _expand(MINIMAL + "checkpoint_storage: {type: s3, bucket: b}\n")
    assert out["checkpoint_storage"] == {
        "type": "s3",
        "bucket": "b",
        "access_key": None,
        "secret_key": None,
        "endpoint_url": None,
        "prefix": None,
        "save_experiment_best": 0,
        "save_trial_best": 1,
        "save_trial_latest": 1,
    }


def test_missing_storage_everywhere_is_an_error() -> None:
    with pytest.raises(ExperimentConfigError) as info:
        _expand(MINIMAL, master_checkpoint_storage=None)
    assert info.value.issues[0].path == "checkpoint_storage"
    assert "Field required" in info.value.issues[0].message


def test_invalid_master_storage_is_an_error() -> None:
    with pytest.raises(ExperimentConfigError) as info:
        _expand(MINIMAL, master_checkpoint_storage={"type": "s3"})
    assert info.value.issues[0].path == "checkpoint_storage.bucket"
    assert "master's default checkpoint_storage" in info.value.issues[0].message


def test_master_storage_is_not_modified() -> None:
    master = {"type": "gcs", "bucket": "b"}
    out = _expand(MINIMAL, master_checkpoint_storage=master)
    assert master == {"type": "gcs", "bucket": "b"}
    assert out["checkpoint_storage"]["save_trial_latest"] == 1


def test_hyperparameter_shorthands_are_normalised() -> None:
    out = _expand(
        MINIMAL + "hyperparameters:\n  lr: 0.1\n  opt: {name: adam, betas: [0.9, 0.99]}\n"
        "  n: {type: int, minval: 1, maxval: 4}\n  c: {type: categorical, vals: [a]}\n"
    )
    assert out["hyperparameters"] == {
        "lr": {"type": "const", "val": 0.1},
        "opt": {
            "name": {"type": "const", "val": "adam"},
            "betas": {"type": "const", "val": [0.9, 0.99]},
        },
        "n": {"type": "int", "minval": 1, "maxval": 4, "count": None},
        "c": {"type": "categorical", "vals": ["a"]},
    }


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("image: x/y:1", {"cpu": "x/y:1", "cuda": "x/y:1", "rocm": "x/y:1"}),
        ("image: {cuda: g}", {"cpu": DEFAULT_IMAGE, "cuda": "g", "rocm": DEFAULT_IMAGE}),
        ("image: {gpu: g, cpu: c}", {"cpu": "c", "cuda": "g", "rocm": DEFAULT_IMAGE}),
    ],
)
def test_image_is_normalised(block: str, expected: dict) -> None:
    assert _expand(MINIMAL + f"environment:\n  {block}\n")["environment"]["image"] == expected


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("[A=1]", {"cpu": ["A=1"], "cuda": ["A=1"], "rocm": ["A=1"]}),
        ("{cuda: [A=1]}", {"cpu": [], "cuda": ["A=1"], "rocm": []}),
        ("{gpu: [G=1]}", {"cpu": [], "cuda": ["G=1"], "rocm": []}),
    ],
)
def test_environment_variables_are_normalised(block: str, expected: dict) -> None:
    out = _expand(MINIMAL + f"environment:\n  environment_variables: {block}\n")
    assert out["environment"]["environment_variables"] == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("max_length: 100\n", 100),
        ("max_length: {epochs: 2}\n", {"epochs": 2}),
    ],
)
def test_max_length_is_kept_when_set(body: str, expected: object) -> None:
    out = _expand(MINIMAL + "  " + body)
    assert out["searcher"]["max_length"] == expected


def test_max_length_is_omitted_when_unset() -> None:
    assert "max_length" not in _expand(MINIMAL)["searcher"]


@pytest.mark.parametrize(
    ("searcher", "expected"),
    [
        (
            "{name: random, metric: m, max_trials: 3}",
            {"max_trials": 3, "max_concurrent_trials": 16},
        ),
        ("{name: grid, metric: m}", {"max_concurrent_trials": 16}),
        (
            "{name: async_halving, metric: m, num_rungs: 3, max_trials: 9, time_metric: b, "
            "max_time: 90}",
            {"divisor": 4.0, "stop_once": False, "max_concurrent_trials": 16},
        ),
        (
            "{name: adaptive_asha, metric: m, max_trials: 9, time_metric: b, max_time: 90}",
            {"mode": "standard", "max_rungs": 5, "bracket_rungs": [], "divisor": 4.0},
        ),
    ],
)
def test_searcher_defaults_are_filled(searcher: str, expected: dict) -> None:
    text = MINIMAL.split("searcher:")[0] + f"searcher: {searcher}\n"
    out = _expand(text)["searcher"]
    for key, value in expected.items():
        assert out[key] == value
    assert out["smaller_is_better"] is True


def test_environment_python_is_kept_when_set_and_absent_otherwise() -> None:
    assert "python" not in _expand(MINIMAL)["environment"]  # Determined's keys only
    out = _expand(MINIMAL + "environment: {python: /opt/venvs/torch}\n")
    assert out["environment"]["python"] == "/opt/venvs/torch"
    again = expand_config(
        validate_experiment_config(out), master_checkpoint_storage=None, now_seconds=0
    )
    assert again == out


def test_preemption_timeout_kept_when_set() -> None:
    assert _expand(MINIMAL + "preemption_timeout: 30\n")["preemption_timeout"] == 30


def test_expansion_is_stable_when_revalidated() -> None:
    first = _expand(
        MINIMAL + "hyperparameters: {lr: 0.1, n: {type: int, minval: 1, maxval: 2}}\n"
        "environment: {image: a/b, environment_variables: [X=1]}\n"
        "resources: {devices: ['/dev/a:/dev/a']}\nmin_validation_period: {epochs: 1}\n",
        default_priority=42,
    )
    again = expand_config(
        validate_experiment_config(first),
        master_checkpoint_storage=None,
        now_seconds=0,
    )
    assert again == first


_names = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)
_leaves = st.one_of(
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.builds(
        lambda a, b: {"type": "int", "minval": min(a, b), "maxval": max(a, b)},
        st.integers(-50, 50),
        st.integers(-50, 50),
    ),
    st.builds(lambda vals: {"type": "categorical", "vals": vals}, st.lists(_names, min_size=1)),
)
_hparams = st.recursive(
    st.dictionaries(_names, _leaves, max_size=4),
    lambda inner: st.dictionaries(_names, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(hparams=_hparams, seed=st.integers(0, 2**31))
def test_expanded_hyperparameters_are_json_and_all_typed(hparams: dict, seed: int) -> None:
    data, _ = load_yaml_mapping(MINIMAL)
    data["hyperparameters"] = hparams
    out = expand_config(
        validate_experiment_config(data), master_checkpoint_storage=MASTER_STORAGE, now_seconds=seed
    )
    assert json.loads(json.dumps(out)) == out

    def check(level: dict) -> None:
        for value in level.values():
            assert isinstance(value, dict)
            if "type" in value:
                assert value["type"] in ("const", "int", "categorical")
            else:
                check(value)

    check(out["hyperparameters"])
    assert out["reproducibility"]["experiment_seed"] == seed


def test_a_nameless_config_gets_the_default_name_and_slots_is_kept_only_when_set() -> None:
    nameless = MINIMAL.replace("name: mnist\n", "")
    out = _expand(nameless, default_name="Experiment (truly-calm-owl)")
    assert out["name"] == "Experiment (truly-calm-owl)"
    assert _expand(MINIMAL, default_name="Experiment (x-y-z)")["name"] == "mnist"
    assert "slots" not in _expand(MINIMAL)["resources"]
    assert _expand(MINIMAL + "resources: {slots: 2}\n")["resources"]["slots"] == 2
