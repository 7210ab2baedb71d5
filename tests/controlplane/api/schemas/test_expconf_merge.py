"""merge_configs: Determined's template merge on raw dicts (reference §5.7)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.api.schemas.expconf import (
    merge_checkpoint_storage,
    merge_configs,
    with_cluster_checkpoint_storage,
)


@pytest.mark.parametrize(
    ("user", "template", "expected"),
    [
        pytest.param({"a": 1}, {"a": 2, "b": 3}, {"a": 1, "b": 3}, id="user-wins-template-fills"),
        pytest.param({"a": None}, {"a": 2}, {"a": 2}, id="null-is-unset"),
        pytest.param({"a": 1}, {"a": None}, {"a": 1}, id="template-null"),
        pytest.param(
            {"resources": {"slots_per_trial": 2}},
            {"resources": {"priority": 10, "slots_per_trial": 1}},
            {"resources": {"slots_per_trial": 2, "priority": 10}},
            id="maps-merge-recursively",
        ),
        pytest.param(
            {"labels": ["a"]}, {"labels": ["b", "c"]}, {"labels": ["a"]}, id="lists-replace"
        ),
        pytest.param({"labels": []}, {"labels": ["b"]}, {"labels": []}, id="empty-list-replaces"),
        pytest.param({"data": 3}, {"data": {"x": 1}}, {"data": 3}, id="type-mismatch-user-wins"),
        pytest.param({"data": {"x": 1}}, {"data": "s"}, {"data": {"x": 1}}, id="map-over-scalar"),
        pytest.param(
            {"environment": {"add_capabilities": ["A"]}},
            {"environment": {"add_capabilities": ["B"], "force_pull_image": True}},
            {"environment": {"add_capabilities": ["A"], "force_pull_image": True}},
            id="other-lists-replace",
        ),
    ],
)
def test_generic_merge(user: dict, template: dict, expected: dict) -> None:
    assert merge_configs(user, template) == expected


@pytest.mark.parametrize(
    ("user", "template", "expected"),
    [
        pytest.param(
            [{"host_path": "/u", "container_path": "/data"}],
            [
                {"host_path": "/t", "container_path": "/data"},
                {"host_path": "/t2", "container_path": "/other"},
            ],
            [
                {"host_path": "/u", "container_path": "/data"},
                {"host_path": "/t2", "container_path": "/other"},
            ],
            id="clash-dropped",
        ),
        pytest.param(
            [],
            [{"host_path": "/t", "container_path": "/x"}],
            [{"host_path": "/t", "container_path": "/x"}],
            id="empty-user-list-appends-template",
        ),
        pytest.param(
            [{"host_path": "/u", "container_path": "/a", "read_only": True}],
            [{"host_path": "/u", "container_path": "/a"}],
            [{"host_path": "/u", "container_path": "/a", "read_only": True}],
            id="same-path-user-wins",
        ),
    ],
)
def test_bind_mounts_append_and_dedupe(user: list, template: list, expected: list) -> None:
    assert merge_configs({"bind_mounts": user}, {"bind_mounts": template}) == {
        "bind_mounts": expected
    }


def test_bind_mounts_taken_from_template_when_user_has_none() -> None:
    template = {"bind_mounts": [{"host_path": "/t", "container_path": "/x"}]}
    assert merge_configs({"name": "n"}, template) == {"name": "n", **template}


def test_devices_append_and_dedupe_including_string_form() -> None:
    user = {
        "resources": {"devices": ["/dev/u:/dev/x", {"host_path": "/h", "container_path": "/y"}]}
    }
    template = {
        "resources": {
            "devices": [
                {"host_path": "/dev/t", "container_path": "/dev/x"},
                "/dev/t:/y:r",
                "/dev/z:/dev/z",
            ],
            "slots_per_trial": 2,
        }
    }
    assert merge_configs(user, template) == {
        "resources": {
            "devices": [
                "/dev/u:/dev/x",
                {"host_path": "/h", "container_path": "/y"},
                "/dev/z:/dev/z",
            ],
            "slots_per_trial": 2,
        }
    }


def _env(value: Any) -> dict:
    return {"environment": {"environment_variables": value}}


@pytest.mark.parametrize(
    ("user", "template", "expected"),
    [
        pytest.param(["U=1"], ["T=1"], ["T=1", "U=1"], id="list-list"),
        pytest.param(
            {"cpu": ["U=1"]},
            {"cpu": ["T=1"], "cuda": ["TC=1"]},
            {"cpu": ["T=1", "U=1"], "cuda": ["TC=1"]},
            id="map-map",
        ),
        pytest.param(
            ["U=1"],
            {"cuda": ["TC=1"]},
            {"cuda": ["TC=1", "U=1"], "cpu": ["U=1"], "rocm": ["U=1"]},
            id="list-over-map",
        ),
        pytest.param(
            {"rocm": ["UR=1"]},
            ["T=1"],
            {"cpu": ["T=1"], "cuda": ["T=1"], "rocm": ["T=1", "UR=1"]},
            id="map-over-list",
        ),
        pytest.param(
            {"gpu": ["UG=1"]},
            {"cuda": ["TC=1"]},
            {"cuda": ["TC=1", "UG=1"]},
            id="legacy-gpu-key-is-cuda",
        ),
        pytest.param([], ["T=1"], ["T=1"], id="empty-user-list"),
    ],
)
def test_environment_variables_concatenate(user: Any, template: Any, expected: Any) -> None:
    assert merge_configs(_env(user), _env(template)) == _env(expected)


def test_environment_variables_from_template_only() -> None:
    assert merge_configs({"environment": {}}, _env(["T=1"])) == _env(["T=1"])


@pytest.mark.parametrize(
    ("user", "template", "expected"),
    [
        pytest.param("u", "t", "u", id="str-str"),
        pytest.param("u", {"cuda": "t"}, "u", id="str-over-map"),
        pytest.param(
            {"cuda": "u"},
            "t",
            {"cpu": "t", "cuda": "u", "rocm": "t"},
            id="map-over-str",
        ),
        pytest.param({"gpu": "u"}, {"cuda": "t", "cpu": "c"}, {"cuda": "u", "cpu": "c"}, id="gpu"),
    ],
)
def test_image_merge(user: Any, template: Any, expected: Any) -> None:
    merged = merge_configs({"environment": {"image": user}}, {"environment": {"image": template}})
    assert merged == {"environment": {"image": expected}}


def test_hyperparameters_nested_maps_merge_but_leaves_do_not() -> None:
    user = {
        "hyperparameters": {
            "lr": {"type": "double", "minval": 0.1, "maxval": 0.2},
            "opt": {"name": "adam", "inner": {"x": 1}},
            "batch": 32,
        }
    }
    template = {
        "hyperparameters": {
            "lr": {"type": "double", "minval": 0.0, "maxval": 1.0, "count": 3},
            "opt": {"name": "sgd", "momentum": 0.9, "inner": {"y": 2}},
            "batch": {"type": "int", "minval": 1, "maxval": 4},
            "dropout": 0.5,
        }
    }
    assert merge_configs(user, template) == {
        "hyperparameters": {
            "lr": {"type": "double", "minval": 0.1, "maxval": 0.2},
            "opt": {"name": "adam", "inner": {"x": 1, "y": 2}, "momentum": 0.9},
            "batch": 32,
            "dropout": 0.5,
        }
    }


def test_hyperparameter_leaf_over_nested_map_wins_whole() -> None:
    user = {"hyperparameters": {"opt": {"type": "const", "val": 1}}}
    template = {"hyperparameters": {"opt": {"a": 1}}}
    assert merge_configs(user, template) == user


@pytest.mark.parametrize(
    ("user", "template", "expected"),
    [
        pytest.param(
            {"name": "random", "max_trials": 4},
            {"name": "adaptive_asha", "metric": "loss", "max_trials": 16, "mode": "aggressive"},
            {"name": "random", "max_trials": 4},
            id="different-name-user-block-wins",
        ),
        pytest.param(
            {"name": "random", "max_trials": 4},
            {"name": "random", "metric": "loss", "max_trials": 16},
            {"name": "random", "max_trials": 4, "metric": "loss"},
            id="same-name-fields-merge",
        ),
        pytest.param(
            {"metric": "acc"},
            {"name": "grid", "metric": "loss"},
            {"metric": "acc", "name": "grid"},
            id="no-name-fields-merge",
        ),
    ],
)
def test_searcher_union(user: dict, template: dict, expected: dict) -> None:
    assert merge_configs({"searcher": user}, {"searcher": template}) == {"searcher": expected}


@pytest.mark.parametrize(
    ("user", "template", "expected"),
    [
        pytest.param(
            {"type": "s3", "bucket": "b"},
            {"type": "shared_fs", "host_path": "/tmp", "save_trial_best": 5},
            {"type": "s3", "bucket": "b"},
            id="different-type-user-block-wins",
        ),
        pytest.param(
            {"type": "s3", "bucket": "b"},
            {"type": "s3", "bucket": "t", "prefix": "p", "save_trial_best": 5},
            {"type": "s3", "bucket": "b", "prefix": "p", "save_trial_best": 5},
            id="same-type-fields-merge",
        ),
    ],
)
def test_checkpoint_storage_union(user: dict, template: dict, expected: dict) -> None:
    merged = merge_configs({"checkpoint_storage": user}, {"checkpoint_storage": template})
    assert merged == {"checkpoint_storage": expected}


def test_inputs_are_not_modified_and_result_shares_nothing() -> None:
    user = {"a": {"b": [1]}, "bind_mounts": [{"host_path": "/u", "container_path": "/u"}]}
    template = {"a": {"c": [2]}, "bind_mounts": [{"host_path": "/t", "container_path": "/t"}]}
    before = (copy.deepcopy(user), copy.deepcopy(template))
    merged = merge_configs(user, template)
    assert (user, template) == before
    merged["a"]["b"].append(9)
    merged["a"]["c"].append(9)
    merged["bind_mounts"][1]["host_path"] = "/changed"
    assert (user, template) == before


def test_non_mappings_are_rejected() -> None:
    with pytest.raises(TypeError):
        merge_configs([], {})  # type: ignore[arg-type]


# ----- properties -----------------------------------------------------------------------------

_KEYS = st.sampled_from(
    ["name", "resources", "searcher", "hyperparameters", "environment", "image", "type", "data"]
) | st.text(alphabet="abcxyz_", min_size=1, max_size=5)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
_PLAIN = st.recursive(
    _SCALARS | st.lists(_SCALARS, max_size=3),
    lambda inner: st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=15,
)
_CONFIGS = st.dictionaries(_KEYS, _PLAIN, max_size=6)


@settings(max_examples=200, deadline=None)
@given(user=_CONFIGS)
def test_empty_template_is_identity(user: dict) -> None:
    assert merge_configs(user, {}) == user


@settings(max_examples=200, deadline=None)
@given(template=_CONFIGS)
def test_empty_user_takes_the_template(template: dict) -> None:
    assert merge_configs({}, template) == template


@settings(max_examples=200, deadline=None)
@given(user=_CONFIGS)
def test_merge_with_itself_is_identity_without_appended_lists(user: dict) -> None:
    assert merge_configs(user, user) == user


_MOUNTS = st.lists(
    st.builds(
        lambda path, ro: {"host_path": "/h" + path, "container_path": "/c" + path, "read_only": ro},
        st.text(alphabet="abc", max_size=3),
        st.booleans(),
    ),
    max_size=5,
    unique_by=lambda mount: mount["container_path"],
)


@settings(max_examples=200, deadline=None)
@given(user=_MOUNTS, template=_MOUNTS)
def test_bind_mounts_keep_user_entries_and_unique_container_paths(
    user: list, template: list
) -> None:
    merged = merge_configs({"bind_mounts": user}, {"bind_mounts": template})["bind_mounts"]
    assert merged[: len(user)] == user
    paths = [mount["container_path"] for mount in merged]
    assert len(paths) == len(set(paths))
    assert set(paths) == {m["container_path"] for m in user + template}
    assert merge_configs({"bind_mounts": user}, {"bind_mounts": user}) == {"bind_mounts": user}


_ENV_LISTS = st.lists(st.text(alphabet="ABC", min_size=1, max_size=2).map(lambda k: k + "=1"))


@settings(max_examples=200, deadline=None)
@given(user=_ENV_LISTS, template=_ENV_LISTS)
def test_environment_variable_lists_concatenate_template_first(user: list, template: list) -> None:
    merged = merge_configs(_env(user), _env(template))
    assert merged == _env(template + user)


CLUSTER_FS = {
    "type": "shared_fs",
    "host_path": "/ckpt",
    "storage_path": "det",
    "save_trial_best": 3,
}


@pytest.mark.parametrize(
    ("user", "cluster", "expected"),
    [
        pytest.param(
            {"save_experiment_best": 2, "save_trial_latest": 4},
            CLUSTER_FS,
            {**CLUSTER_FS, "save_experiment_best": 2, "save_trial_latest": 4},
            id="gc-keys-only-complete-the-clusters",
        ),
        pytest.param(
            {"save_trial_best": 0},
            CLUSTER_FS,
            {**CLUSTER_FS, "save_trial_best": 0},
            id="user-gc-key-wins",
        ),
        pytest.param(
            {"storage_path": "mine"},
            CLUSTER_FS,
            {**CLUSTER_FS, "storage_path": "mine"},
            id="no-type-any-key-merges",
        ),
        pytest.param(
            {"type": "shared_fs", "host_path": "/other"},
            CLUSTER_FS,
            {**CLUSTER_FS, "host_path": "/other"},
            id="same-type-merges",
        ),
        pytest.param(
            {"type": "s3", "bucket": "b"},
            CLUSTER_FS,
            {"type": "s3", "bucket": "b", "save_trial_best": 3},
            id="other-type-replaces-storage-keeps-gc-keys",
        ),
        pytest.param(
            {"type": "s3", "bucket": "b", "save_trial_best": 1},
            CLUSTER_FS,
            {"type": "s3", "bucket": "b", "save_trial_best": 1},
            id="other-type-own-gc-key-wins",
        ),
        pytest.param(
            {"type": None, "save_trial_latest": None, "save_trial_best": 7},
            CLUSTER_FS,
            {**CLUSTER_FS, "save_trial_latest": None, "save_trial_best": 7},
            id="nulls-are-unset",
        ),
        pytest.param(None, CLUSTER_FS, CLUSTER_FS, id="none-takes-the-clusters"),
        pytest.param({"save_trial_best": 2}, None, {"save_trial_best": 2}, id="no-cluster"),
    ],
)
def test_checkpoint_storage_over_the_clusters(user: Any, cluster: Any, expected: Any) -> None:
    before = (copy.deepcopy(user), copy.deepcopy(cluster))
    assert merge_checkpoint_storage(user, cluster) == expected
    assert (user, cluster) == before


_GC_KEYS = ("save_experiment_best", "save_trial_best", "save_trial_latest")
_gc = st.dictionaries(st.sampled_from(_GC_KEYS), st.none() | st.integers(0, 9))
_storage = st.fixed_dictionaries(
    {},
    optional={
        "type": st.none() | st.sampled_from(["shared_fs", "s3"]),
        "host_path": st.sampled_from(["/a", "/b"]),
        "bucket": st.sampled_from(["x", "y"]),
    },
)


@settings(max_examples=200, deadline=None)
@given(user=st.tuples(_storage, _gc), cluster=st.tuples(_storage, _gc))
def test_checkpoint_storage_merge_properties(user: tuple, cluster: tuple) -> None:
    mine, theirs = {**user[0], **user[1]}, {**cluster[0], **cluster[1]}
    out = merge_checkpoint_storage(mine, theirs)
    for key, value in mine.items():  # the user's set values always survive
        if value is not None:
            assert out[key] == value
    for key in _GC_KEYS:  # GC keys fall back to the cluster's whatever the types
        if mine.get(key) is None:
            assert out.get(key) == theirs.get(key)
    foreign = mine.get("type") not in (None, theirs.get("type"))
    for key in ("type", "host_path", "bucket"):  # storage keys: the cluster's unless foreign
        if mine.get(key) is None:
            assert out.get(key) == (mine.get(key) if foreign else theirs.get(key))


def test_with_cluster_checkpoint_storage_leaves_configs_without_a_block() -> None:
    config = {"name": "e"}
    assert with_cluster_checkpoint_storage(config, CLUSTER_FS) is config
    partial = {"name": "e", "checkpoint_storage": {"save_trial_latest": 2}}
    merged = with_cluster_checkpoint_storage(partial, CLUSTER_FS)
    assert merged == {"name": "e", "checkpoint_storage": {**CLUSTER_FS, "save_trial_latest": 2}}
    assert partial == {"name": "e", "checkpoint_storage": {"save_trial_latest": 2}}
