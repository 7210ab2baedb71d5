"""validate_experiment_config: storage, resources, environment, top level, required keys."""

from __future__ import annotations

import pytest

from controlplane.api.schemas.expconf import (
    AzureStorage,
    DirectoryStorage,
    ExperimentConfig,
    ExperimentConfigError,
    GCSStorage,
    S3Storage,
    SharedFSStorage,
    load_yaml_mapping,
    validate_experiment_config,
)

# Lines 1-5 are always the same, so the first line of a test's own block is line 6.
HEAD = """\
name: exp
entrypoint: python3 train.py
searcher:
  name: single
  metric: loss
"""


def _validate(text: str, *, managed: bool = True) -> ExperimentConfig:
    data, lines = load_yaml_mapping(text)
    return validate_experiment_config(data, lines, managed=managed)


def _issues(text: str, *, managed: bool = True) -> list[tuple[str, int | None, str]]:
    data, lines = load_yaml_mapping(text)
    with pytest.raises(ExperimentConfigError) as info:
        validate_experiment_config(data, lines, managed=managed)
    return [(issue.path, issue.line, issue.message) for issue in info.value.issues]


def _one_issue(text: str) -> tuple[str, int | None, str]:
    found = _issues(text)
    assert len(found) == 1, found
    return found[0]


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


def test_slots_is_rejected_in_experiments() -> None:
    path, line, message = _one_issue(HEAD + "resources:\n  slots_per_trial: 1\n  slots: 2\n")
    assert (path, line) == ("resources.slots", 8)
    assert "slots is not allowed" in message
    assert "slots_per_trial" in message


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


# ----- environment ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "image"),
    [
        ("image: my/img:1", ("my/img:1", "my/img:1", "my/img:1")),
        ("image: {cpu: c, cuda: g}", ("c", "g", None)),
        ("image: {gpu: legacy}", (None, "legacy", None)),
        ("image: {gpu: legacy, cuda: new}", (None, "new", None)),
    ],
)
def test_environment_image_forms(block: str, image: tuple) -> None:
    env = _validate(HEAD + f"environment:\n  {block}\n").environment
    assert env.image is not None
    assert (env.image.cpu, env.image.cuda, env.image.rocm) == image


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("[A=1, B=x=y]", (["A=1", "B=x=y"], ["A=1", "B=x=y"], ["A=1", "B=x=y"])),
        ("{cpu: [A=1], rocm: [R=1]}", (["A=1"], [], ["R=1"])),
        ("{gpu: [G=1], cuda: [C=1]}", ([], ["G=1", "C=1"], [])),
        ("[EMPTY=]", (["EMPTY="], ["EMPTY="], ["EMPTY="])),
    ],
)
def test_environment_variable_forms(block: str, expected: tuple) -> None:
    env = _validate(HEAD + f"environment:\n  environment_variables: {block}\n").environment
    variables = env.environment_variables
    assert (variables.cpu, variables.cuda, variables.rocm) == expected


def test_environment_other_keys() -> None:
    env = _validate(
        HEAD + "environment:\n  force_pull_image: true\n  registry_auth: {username: u, "
        "password: p, serveraddress: r.io}\n  add_capabilities: [SYS_ADMIN]\n"
        "  drop_capabilities: [NET_RAW]\n  ports: {tb: 6006}\n"
        "  proxy_ports: [{proxy_port: 8888, proxy_tcp: true}]\n"
        "  pod_spec: {spec: {containers: [{name: determined-container}]}}\n"
    ).environment
    assert env.force_pull_image is True
    assert env.registry_auth is not None and env.registry_auth.username == "u"
    assert env.add_capabilities == ["SYS_ADMIN"]
    assert env.drop_capabilities == ["NET_RAW"]
    assert env.ports == {"tb": 6006}
    assert env.proxy_ports[0].proxy_port == 8888 and env.proxy_ports[0].proxy_tcp is True
    assert env.pod_spec == {"spec": {"containers": [{"name": "determined-container"}]}}


@pytest.mark.parametrize(
    ("block", "path", "line", "fragment"),
    [
        ("  image: 5\n", "environment.image", 7, "string or a mapping"),
        ("  image: {cpu: a, tpu: b}\n", "environment.image.tpu", 7, "unknown key 'tpu'"),
        (
            "  environment_variables:\n    - A=1\n    - NOVALUE\n",
            "environment.environment_variables.1",
            9,
            "must look like NAME=value",
        ),
        (
            "  environment_variables: {cpu: ['=x']}\n",
            "environment.environment_variables.cpu.0",
            7,
            "NAME=value",
        ),
        ("  environment_variables: A=1\n", "environment.environment_variables", 7, "a list"),
        ("  ports: {tb: http}\n", "environment.ports.tb", 7, "valid integer"),
        ("  proxy_ports: [{proxy_port: 0}]\n", "environment.proxy_ports.0.proxy_port", 7, ">="),
        ("  force_pull_image: 'yes'\n", "environment.force_pull_image", 7, "valid boolean"),
        ("  registry_auth: {token: x}\n", "environment.registry_auth.token", 7, "unknown key"),
        ("  gpus: 1\n", "environment.gpus", 7, "unknown key 'gpus'"),
    ],
)
def test_invalid_environment(block: str, path: str, line: int, fragment: str) -> None:
    got = _one_issue(HEAD + "environment:\n" + block)
    assert got[:2] == (path, line)
    assert fragment.replace(">=", "greater than or equal to") in got[2]


# ----- top level -------------------------------------------------------------------------------


def test_top_level_defaults() -> None:
    cfg = _validate(HEAD)
    assert cfg.labels == []
    assert cfg.max_restarts == 5
    assert cfg.checkpoint_policy == "best"
    assert cfg.min_validation_period.model_dump() == {"batches": 0}
    assert cfg.scheduling_unit == 100
    assert cfg.records_per_epoch == 0
    assert cfg.perform_initial_validation is False
    assert cfg.profiling.enabled is False and cfg.profiling.sync_timings is True
    assert cfg.data == {} and cfg.debug is False
    assert cfg.checkpoint_storage is None
    assert cfg.preemption_timeout is None
    assert cfg.reproducibility.experiment_seed is None


def test_every_documented_key_is_accepted() -> None:
    cfg = _validate(
        HEAD + "description: d\nlabels: [a, b]\nproject: p\nworkspace: w\nhyperparameters: {}\n"
        "resources: {}\nenvironment: {}\nbind_mounts: [{host_path: /a, container_path: /b, "
        "read_only: true}]\ncheckpoint_storage: {type: directory, container_path: /c}\n"
        "checkpoint_policy: all\nmax_restarts: 0\nmin_validation_period: {epochs: 1}\n"
        "min_checkpoint_period: {records: 100}\nscheduling_unit: 10\nrecords_per_epoch: 1000\n"
        "perform_initial_validation: true\npreemption_timeout: 60\n"
        "profiling: {enabled: true, begin_on_batch: 1, end_after_batch: 9}\n"
        "reproducibility: {experiment_seed: 7}\ndata: {url: x}\ndebug: true\n"
        "log_policies: [{pattern: '.*OOM.*', action: {type: cancel_retries}}]\n"
        "retention_policy: {log_retention_days: 30}\noptimizations: {aggregation_frequency: 2}\n"
        "tensorboard_storage: {type: s3}\nintegrations: {pachyderm: {}}\nsecurity: {}\n"
        "slurm: {slots_per_node: 4}\npbs: {}\ndata_layer: {type: shared_fs}\n"
    )
    assert cfg.bind_mounts[0].read_only is True
    assert cfg.min_validation_period.model_dump() == {"epochs": 1}
    assert cfg.reproducibility.experiment_seed == 7
    assert cfg.slurm == {"slots_per_node": 4}


@pytest.mark.parametrize(
    ("entrypoint", "expected"),
    [
        ("python3 train.py", "python3 train.py"),
        ("[python3, train.py]", ["python3", "train.py"]),
        ("model_def:Trial", "model_def:Trial"),
    ],
)
def test_entrypoint_forms(entrypoint: str, expected: object) -> None:
    text = HEAD.replace("entrypoint: python3 train.py", f"entrypoint: {entrypoint}")
    assert _validate(text).entrypoint == expected


@pytest.mark.parametrize(
    ("extra", "path", "line", "fragment"),
    [
        ("colour: red\n", "colour", 6, "unknown key 'colour'"),
        ("labels: a\n", "labels", 6, "valid list"),
        ("labels: [a, 1]\n", "labels.1", 6, "valid string"),
        ("checkpoint_policy: some\n", "checkpoint_policy", 6, "'best', 'all' or 'none'"),
        ("max_restarts: -1\n", "max_restarts", 6, "greater than or equal to 0"),
        ("max_restarts: true\n", "max_restarts", 6, "valid integer"),
        ("debug: 1\n", "debug", 6, "valid boolean"),
        ("min_validation_period: {}\n", "min_validation_period", 6, "exactly one of"),
        ("min_checkpoint_period: {steps: 3}\n", "min_checkpoint_period.steps", 6, "unknown key"),
        ("scheduling_unit: 0\n", "scheduling_unit", 6, "greater than or equal to 1"),
        ("data: [1]\n", "data", 6, "mapping"),
        ("slurm: yes\n", "slurm", 6, "mapping"),
        ("bind_mounts:\n  - host_path: /a\n", "bind_mounts.0.container_path", 7, "Field required"),
        ("bind_mounts: {host_path: /a}\n", "bind_mounts", 6, "valid list"),
        (
            "retention_policy: {log_retention_days: -2}\n",
            "retention_policy.log_retention_days",
            6,
            "-1",
        ),
        ("reproducibility: {experiment_seed: -1}\n", "reproducibility.experiment_seed", 6, "0"),
        ("profiling: {enable: true}\n", "profiling.enable", 6, "unknown key"),
        ("optimizations: {mixed_precision: O4}\n", "optimizations.mixed_precision", 6, "'O0'"),
        ("preemption_timeout: soon\n", "preemption_timeout", 6, "valid integer"),
    ],
)
def test_invalid_top_level(extra: str, path: str, line: int, fragment: str) -> None:
    got = _one_issue(HEAD + extra)
    assert got[:2] == (path, line)
    assert fragment in got[2]


def test_entrypoint_must_be_string_or_list() -> None:
    text = HEAD.replace("entrypoint: python3 train.py", "entrypoint: {cmd: x}")
    assert _one_issue(text)[:2] == ("entrypoint", 2)
    text = HEAD.replace("entrypoint: python3 train.py", "entrypoint: [python3, 3]")
    assert "must all be strings" in _one_issue(text)[2]


def test_null_means_unset() -> None:
    cfg = _validate(
        HEAD + "resources: {slots_per_trial: null, priority: null}\nmax_restarts: null\n"
        "bind_mounts: null\nenvironment: {image: null}\ndescription: ~\n"
    )
    assert cfg.resources.slots_per_trial == 1
    assert cfg.max_restarts == 5
    assert cfg.bind_mounts == []
    assert cfg.environment.image is None


def test_null_unknown_key_is_still_rejected() -> None:
    assert _one_issue(HEAD + "resources: {slots: null}\n")[0] == "resources.slots"


def test_every_issue_is_reported_at_once() -> None:
    found = _issues(
        "entrypoint: 5\nsearcher: {name: custom}\nresources:\n  slots: 2\n  priority: 0\n"
        "hyperparameters:\n  lr: {type: int, minval: 2, maxval: 1}\n"
    )
    paths = [path for path, _, _ in found]
    assert paths == [
        "entrypoint",
        "hyperparameters.lr.minval",
        "searcher.name",
        "resources.priority",
        "resources.slots",
        "name",
        "searcher.metric",
    ]
    assert [line for _, line, _ in found] == [1, 7, 2, 5, 4, None, 2]


# ----- eventually required ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path", "line"),
    [
        ("entrypoint: x\nsearcher: {name: single, metric: m}\n", "name", None),
        ("name: n\nentrypoint: x\n", "searcher", None),
        ("name: n\nentrypoint: x\nsearcher: null\n", "searcher", 3),
        ("name: n\nentrypoint: x\nsearcher: {name: single}\n", "searcher.metric", 3),
        ("name: n\nsearcher: {name: single, metric: m}\n", "entrypoint", None),
        ("name: null\nentrypoint: x\nsearcher: {name: single, metric: m}\n", "name", 1),
    ],
)
def test_eventually_required(text: str, path: str, line: int | None) -> None:
    path_found, line_found, message = _one_issue(text)
    assert (path_found, line_found) == (path, line)
    assert "Field required" in message


def test_unmanaged_experiments_need_no_entrypoint() -> None:
    cfg = _validate("name: n\nsearcher: {name: single, metric: m}\n", managed=False)
    assert cfg.entrypoint is None


def test_checkpoint_storage_is_not_required_yet() -> None:
    assert _validate(HEAD).checkpoint_storage is None


def test_non_mapping_data_is_rejected() -> None:
    with pytest.raises(ExperimentConfigError, match="must be a mapping"):
        validate_experiment_config([1, 2])  # type: ignore[arg-type]
