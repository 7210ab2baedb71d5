"""validate_experiment_config: environment and top-level keys."""

from __future__ import annotations

import pytest

# Lines 1-5 are always the same, so the first line of a test's own block is line 6.
from tests.controlplane.api.schemas.expconf_checks import issues as _issues
from tests.controlplane.api.schemas.expconf_checks import one_issue as _one_issue
from tests.controlplane.api.schemas.expconf_checks import validate as _validate

HEAD = """\
name: exp
entrypoint: python3 train.py
searcher:
  name: single
  metric: loss
"""


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
        ("  python: 3\n", "environment.python", 7, "must be a string"),
        ("  python: [/opt/venv]\n", "environment.python", 7, "got list"),
        ("  python: ''\n", "environment.python", 7, "must not be empty"),
        ("  python: venv/bin/python\n", "environment.python", 7, "is a relative path"),
    ],
)
def test_invalid_environment(block: str, path: str, line: int, fragment: str) -> None:
    got = _one_issue(HEAD + "environment:\n" + block)
    assert got[:2] == (path, line)
    assert fragment.replace(">=", "greater than or equal to") in got[2]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/opt/venvs/torch", "/opt/venvs/torch"),
        ("/opt/venvs/torch/bin/python3", "/opt/venvs/torch/bin/python3"),
        ("python3.12", "python3.12"),
        ("' /opt/venv '", "/opt/venv"),
        ("null", None),
    ],
)
def test_environment_python_names_the_tasks_python(value: str, expected: str | None) -> None:
    env = _validate(HEAD + f"environment:\n  python: {value}\n").environment
    assert env.python == expected


def test_a_wrong_type_for_environment_python_says_what_it_expects() -> None:
    path, line, message = _one_issue(HEAD + "environment:\n  image: x\n  python: 3.11\n")
    assert (path, line) == ("environment.python", 8)
    assert message == (
        "must be a string: the absolute path of a Python interpreter or virtualenv, or a "
        "command name such as python3.12; got number"
    )


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
    assert _one_issue(HEAD + "resources: {slotz: null}\n")[0] == "resources.slotz"


def test_every_issue_is_reported_at_once() -> None:
    found = _issues(
        "entrypoint: 5\nsearcher: {name: custom}\nresources:\n  slotz: 2\n  priority: 0\n"
        "hyperparameters:\n  lr: {type: int, minval: 2, maxval: 1}\n"
    )
    paths = [path for path, _, _ in found]
    assert paths == [
        "entrypoint",
        "hyperparameters.lr.minval",
        "searcher.name",
        "resources.priority",
        "resources.slotz",
        "searcher.metric",
    ]
    assert [line for _, line, _ in found] == [1, 7, 2, 5, 4, 2]
