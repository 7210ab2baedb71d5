"""`task_container_defaults.python` in the master config: a pool's default task Python, its own
block over the top-level one, checked where it is written."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from resource_pools.config import ResourcesConfig, format_config_errors, task_python_problem


def _errors(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        ResourcesConfig.from_master_config(data)
    return format_config_errors(caught.value)


POOLS = [
    {"pool_name": "default"},
    {"pool_name": "gpu", "task_container_defaults": {"python": "/opt/gpu-venv"}},
    {"pool_name": "other", "task_container_defaults": {"shm_size_bytes": 1024}},
]


@pytest.mark.parametrize(
    ("top", "pool", "expected"),
    [
        ({"python": "/opt/venv"}, "default", "/opt/venv"),
        ({"python": "/opt/venv"}, "gpu", "/opt/gpu-venv"),  # the pool's own block wins
        ({"python": "/opt/venv"}, "other", "/opt/venv"),  # a block without python inherits it
        (None, "default", ""),
        (None, "gpu", "/opt/gpu-venv"),
        ({"image": "x"}, "other", ""),
    ],
)
def test_a_pools_task_python_is_its_own_else_the_top_levels(
    top: dict[str, Any] | None, pool: str, expected: str
) -> None:
    config = ResourcesConfig.from_master_config(
        {"task_container_defaults": top, "resource_pools": POOLS}
    )
    assert config.task_python(pool) == expected


def test_the_legacy_format_keeps_the_top_level_python() -> None:
    config = ResourcesConfig.from_master_config(
        {"scheduler": {"type": "priority"}, "task_container_defaults": {"python": "python3.12"}}
    )
    assert config.task_python("default") == "python3.12"


def test_an_unknown_pool_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        ResourcesConfig.from_master_config({}).task_python("nowhere")


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (
            {"task_container_defaults": {"python": 3}},
            "task_container_defaults.python: must be a string: the absolute path of a Python "
            "interpreter or virtualenv, or a command name such as python3.12; got integer",
        ),
        (
            {
                "resource_pools": [
                    {"pool_name": "a"},
                    {"pool_name": "b", "task_container_defaults": {"python": "venv/bin/python"}},
                ]
            },
            "resource_pools[1].task_container_defaults.python: 'venv/bin/python' is a relative "
            "path; give an absolute path (it is read where the task runs) or a command name "
            "without '/', such as python3.12",
        ),
        (
            {
                "resource_pools": [
                    {"pool_name": "default", "task_container_defaults": {"python": ""}}
                ]
            },
            "resource_pools[0].task_container_defaults.python: must not be empty (leave the key "
            "out to use the default)",
        ),
    ],
)
def test_a_bad_python_is_reported_at_its_key(data: dict[str, Any], line: str) -> None:
    assert _errors(data) == [line]


@pytest.mark.parametrize("value", ["/opt/venv", "/usr/bin/python3.12", "python3", " /x "])
def test_good_values(value: str) -> None:
    assert task_python_problem(value) is None
