"""validate_experiment_config: storage, resources, environment, top level, required keys."""

from __future__ import annotations

import pytest

from controlplane.api.schemas.expconf import (
    AzureStorage,
    DirectoryStorage,
    ExperimentConfigError,
    GCSStorage,
    S3Storage,
    SharedFSStorage,
    load_yaml_mapping,
    validate_experiment_config,
)

# Lines 1-5 are always the same, so the first line of a test's own block is line 6.
from tests.controlplane.api.schemas.expconf_checks import one_issue as _one_issue
from tests.controlplane.api.schemas.expconf_checks import validate as _validate

HEAD = """\
name: exp
entrypoint: python3 train.py
searcher:
  name: single
  metric: loss
"""


def test_wrong_type_on_line_7_is_reported_on_line_7() -> None:
    text = HEAD + "resources:\n  slots_per_trial: two\n"
    data, lines = load_yaml_mapping(text)
    with pytest.raises(ExperimentConfigError) as info:
        validate_experiment_config(data, lines)
    [issue] = info.value.issues
    assert issue.path == "resources.slots_per_trial"
    assert issue.line == 7
    assert str(info.value).startswith(
        "resources.slots_per_trial (line 7): Input should be a valid integer"
    )


def test_without_a_line_map_lines_are_none() -> None:
    data, _ = load_yaml_mapping(HEAD + "resources:\n  slots_per_trial: two\n")
    with pytest.raises(ExperimentConfigError) as info:
        validate_experiment_config(data)
    assert info.value.issues[0].line is None


# ----- checkpoint storage ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "model", "fields"),
    [
        (
            "{type: shared_fs, host_path: /mnt/ckpt}",
            SharedFSStorage,
            {"storage_path": None, "propagation": "rprivate", "save_trial_best": 1},
        ),
        (
            "{type: shared_fs, host_path: /mnt, storage_path: /mnt/sub, save_trial_latest: 3}",
            SharedFSStorage,
            {"storage_path": "/mnt/sub", "save_trial_latest": 3},
        ),
        (
            "{type: shared_fs, host_path: /mnt, storage_path: rel/dir}",
            SharedFSStorage,
            {"storage_path": "rel/dir"},
        ),
        ("{type: directory, container_path: /ckpt}", DirectoryStorage, {"save_trial_best": 1}),
        (
            "{type: s3, bucket: b, prefix: p, endpoint_url: 'http://127.0.0.1:9000'}",
            S3Storage,
            {"bucket": "b", "access_key": None, "prefix": "p"},
        ),
        (
            "{type: s3, bucket: b, access_key: k, secret_key: s, save_experiment_best: 2}",
            S3Storage,
            {"access_key": "k", "save_experiment_best": 2},
        ),
        ("{type: gcs, bucket: b}", GCSStorage, {"prefix": None, "save_experiment_best": 0}),
        (
            "{type: azure, container: c, connection_string: cs}",
            AzureStorage,
            {"account_url": None},
        ),
        (
            "{type: azure, container: c, account_url: 'https://x', credential: k}",
            AzureStorage,
            {"credential": "k"},
        ),
    ],
)
def test_storage_types(block: str, model: type, fields: dict) -> None:
    cfg = _validate(HEAD + f"checkpoint_storage: {block}\n")
    assert type(cfg.checkpoint_storage) is model
    for key, value in fields.items():
        assert getattr(cfg.checkpoint_storage, key) == value


def test_storage_gc_defaults() -> None:
    cfg = _validate(HEAD + "checkpoint_storage: {type: gcs, bucket: b}\n")
    storage = cfg.checkpoint_storage
    assert (storage.save_experiment_best, storage.save_trial_best, storage.save_trial_latest) == (
        0,
        1,
        1,
    )


@pytest.mark.parametrize(
    ("block", "path", "line", "fragment"),
    [
        ("  type: shared_fs\n", "checkpoint_storage.host_path", 6, "Field required"),
        (
            "  type: shared_fs\n  host_path: /mnt\n  storage_path: /elsewhere\n",
            "checkpoint_storage.storage_path",
            9,
            "relative directory or a subdirectory of host_path",
        ),
        ("  type: s3\n  prefix: p\n", "checkpoint_storage.bucket", 6, "Field required"),
        ("  type: gcs\n  bucket: 5\n", "checkpoint_storage.bucket", 8, "valid string"),
        (
            "  type: gcs\n  bucket: b\n  region: x\n",
            "checkpoint_storage.region",
            9,
            "unknown key 'region'",
        ),
        ("  type: directory\n", "checkpoint_storage.container_path", 6, "Field required"),
        (
            "  type: azure\n  container: c\n",
            "checkpoint_storage",
            6,
            "exactly one of connection_string or account_url",
        ),
        (
            "  type: azure\n  container: c\n  connection_string: a\n  account_url: b\n",
            "checkpoint_storage",
            6,
            "exactly one of connection_string or account_url",
        ),
        (
            "  type: azure\n  connection_string: a\n",
            "checkpoint_storage.container",
            6,
            "Field required",
        ),
        (
            "  type: s3\n  bucket: b\n  save_trial_best: -1\n",
            "checkpoint_storage.save_trial_best",
            9,
            "greater than or equal to 0",
        ),
        ("  type: hdfs\n  hdfs_url: x\n", "checkpoint_storage.type", 7, "unknown checkpoint"),
        ("  bucket: b\n", "checkpoint_storage.type", 6, "Field required"),
    ],
)
def test_invalid_storage(block: str, path: str, line: int, fragment: str) -> None:
    got = _one_issue(HEAD + "checkpoint_storage:\n" + block)
    assert got[:2] == (path, line)
    assert fragment in got[2]


# ----- resources ------------------------------------------------------------------------------


def test_resources_defaults() -> None:
    resources = _validate(HEAD).resources
    assert resources.slots_per_trial == 1
    assert resources.priority is None
    assert resources.resource_pool == ""
    assert resources.weight == 1
    assert resources.devices == []
    assert resources.is_single_node is None


def test_slots_is_accepted_and_ignored_as_in_determined() -> None:
    """Determined's expconf schema has resources.slots (integer or null): a template shared
    with commands holds it, and `experiment create --template` must take it."""
    cfg = _validate(HEAD + "resources:\n  slots_per_trial: 1\n  slots: 2\n")
    assert cfg.resources.slots == 2 and cfg.resources.slots_per_trial == 1
    assert _validate(HEAD + "resources: {slots: null}\n").resources.slots is None
    path, line, _ = _one_issue(HEAD + "resources:\n  slots: two\n")
    assert (path, line) == ("resources.slots", 7)


@pytest.mark.parametrize(
    ("priority", "ok"), [(0, False), (1, True), (42, True), (99, True), (100, False)]
)
def test_priority_range(priority: int, ok: bool) -> None:
    text = HEAD + f"resources:\n  priority: {priority}\n"
    if ok:
        assert _validate(text).resources.priority == priority
    else:
        path, line, message = _one_issue(text)
        assert (path, line) == ("resources.priority", 7)
        assert "than or equal to" in message


@pytest.mark.parametrize(("slots", "ok"), [(-1, False), (0, True), (8, True)])
def test_slots_per_trial_range(slots: int, ok: bool) -> None:
    text = HEAD + f"resources: {{slots_per_trial: {slots}}}\n"
    if ok:
        assert _validate(text).resources.slots_per_trial == slots
    else:
        assert _one_issue(text)[:2] == ("resources.slots_per_trial", 6)


@pytest.mark.parametrize(
    ("value", "ok"),
    [("4294967296", True), ("'4G'", True), ("512MiB", True), ("'1.5 gb'", True), ("lots", False)],
)
def test_shm_size(value: str, ok: bool) -> None:
    text = HEAD + f"resources: {{shm_size: {value}}}\n"
    if ok:
        assert _validate(text).resources.shm_size is not None
    else:
        assert "valid memory size" in _one_issue(text)[2]


def test_devices_map_and_string_forms() -> None:
    cfg = _validate(
        HEAD + "resources:\n  devices:\n    - /dev/fuse:/dev/fuse\n    - /dev/a:/dev/b:r\n"
        "    - {host_path: /dev/c, container_path: /dev/c}\n"
    )
    assert [(d.host_path, d.container_path, d.mode) for d in cfg.resources.devices] == [
        ("/dev/fuse", "/dev/fuse", "mrw"),
        ("/dev/a", "/dev/b", "r"),
        ("/dev/c", "/dev/c", "mrw"),
    ]


def test_bad_device_string() -> None:
    path, line, message = _one_issue(HEAD + "resources:\n  devices:\n    - /dev/fuse\n")
    assert (path, line) == ("resources.devices.0", 8)
    assert "host_path:container_path" in message


# ----- eventually required ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path", "line"),
    [
        ("name: n\nentrypoint: x\n", "searcher", None),
        ("name: n\nentrypoint: x\nsearcher: null\n", "searcher", 3),
        ("name: n\nentrypoint: x\nsearcher: {name: single}\n", "searcher.metric", 3),
        ("name: n\nsearcher: {name: single, metric: m}\n", "entrypoint", None),
    ],
)
def test_eventually_required(text: str, path: str, line: int | None) -> None:
    path_found, line_found, message = _one_issue(text)
    assert (path_found, line_found) == (path, line)
    assert "Field required" in message


@pytest.mark.parametrize("head", ["", "name: null\n"])
def test_a_config_without_a_name_is_valid(head: str) -> None:
    """Determined names it "Experiment (<petname>)" when the master expands it."""
    cfg = _validate(head + "entrypoint: x\nsearcher: {name: single, metric: m}\n")
    assert cfg.name is None


def test_unmanaged_experiments_need_no_entrypoint() -> None:
    cfg = _validate("name: n\nsearcher: {name: single, metric: m}\n", managed=False)
    assert cfg.entrypoint is None


def test_checkpoint_storage_is_not_required_yet() -> None:
    assert _validate(HEAD).checkpoint_storage is None


def test_non_mapping_data_is_rejected() -> None:
    with pytest.raises(ExperimentConfigError, match="must be a mapping"):
        validate_experiment_config([1, 2])  # type: ignore[arg-type]
