"""The command config (`det cmd run --config-file`): defaults, shorthands, errors by key path."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.schemas.commands import validate_command_config
from controlplane.api.schemas.expconf import ExperimentConfigError
from controlplane.services.commands import entrypoint_argv, memory_bytes


class TestValid:
    def test_defaults(self) -> None:
        cfg = validate_command_config({"entrypoint": ["echo", "hi"]})
        assert cfg.resources.slots == 1 and cfg.resources.resource_pool == ""
        assert cfg.resources.priority is None and cfg.description is None
        assert cfg.environment.image is None and cfg.bind_mounts == []

    def test_shorthands_and_nulls(self) -> None:
        cfg = validate_command_config(
            {
                "entrypoint": "python3 train.py",
                "description": None,
                "environment": {"image": "img", "environment_variables": ["A=1"]},
                "resources": {"slots": 0, "shm_size": "4G", "devices": ["/dev/a:/dev/b"]},
            }
        )
        assert cfg.description is None
        assert cfg.environment.image is not None and cfg.environment.image.cuda == "img"
        assert cfg.environment.environment_variables.cpu == ["A=1"]
        assert cfg.resources.slots == 0 and cfg.resources.shm_size == "4G"
        assert cfg.resources.devices[0].container_path == "/dev/b"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, "entrypoint: Field required"),
        ({"entrypoint": []}, "entrypoint: entrypoint must name a program to run"),
        ({"entrypoint": "  "}, "entrypoint: entrypoint must not be empty"),
        ({"entrypoint": ["a", 1]}, "entrypoint: entrypoint list items must all be strings"),
        ({"entrypoint": 5}, "entrypoint must be a string or a list of strings, got integer"),
        ({"entrypoint": ["x"], "resources": {"slots": -1}}, "resources.slots"),
        ({"entrypoint": ["x"], "resources": {"slots_per_trial": 2}}, "resources.slots_per_trial"),
        ({"entrypoint": ["x"], "resources": {"priority": 100}}, "resources.priority"),
        ({"entrypoint": ["x"], "searcher": {}}, "searcher: unknown key 'searcher'"),
        (
            {"entrypoint": ["x"], "environment": {"environment_variables": ["NOEQUALS"]}},
            "environment.environment_variables",
        ),
        ({"entrypoint": ["x"], "bind_mounts": [{"host_path": "/a"}]}, "bind_mounts.0"),
        ({"entrypoint": ["x"], "resources": {"shm_size": "lots"}}, "resources.shm_size"),
    ],
)
def test_invalid_configs_name_the_key(data: dict[str, Any], expected: str) -> None:
    with pytest.raises(ExperimentConfigError) as info:
        validate_command_config(data)
    assert expected in str(info.value)


def test_not_a_mapping() -> None:
    with pytest.raises(ExperimentConfigError, match="must be a mapping, got list"):
        validate_command_config([])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "size"),
    [
        (None, None),
        (1024, 1024),
        ("10", 10),
        ("10b", 10),
        ("2k", 2048),
        ("1G", 1 << 30),
        ("512MiB", 512 << 20),
        ("1.5g", 3 << 29),
        ("4 GB", 4 << 30),
    ],
)
def test_memory_sizes_count_in_powers_of_1024(value: int | str | None, size: int | None) -> None:
    assert memory_bytes(value) == size


@pytest.mark.parametrize(
    ("entrypoint", "argv"),
    [
        # several arguments are exec'd as given (Determined's command-entrypoint.sh: `exec "$@"`)
        (["echo", "a b"], ("echo", "a b")),
        (["sh", "-c", "exit 3"], ("sh", "-c", "exit 3")),
        # one argument runs through the shell (`exec /bin/sh -c "$@"`): `det cmd run 'a; b'`
        (["for x in a b; do echo $x; done"], ("/bin/sh", "-c", "for x in a b; do echo $x; done")),
        (["true"], ("/bin/sh", "-c", "true")),
        # a string from a config file is one argument too
        ("echo $HOME", ("/bin/sh", "-c", "echo $HOME")),
    ],
)
def test_entrypoint_argv(entrypoint: str | list[str], argv: tuple[str, ...]) -> None:
    assert entrypoint_argv(entrypoint) == argv
