"""On docker, a task's Python named by the experiment or the pool is an interpreter inside the
image: it replaces an argv[0] of python/python3, and a path's folder leads the image's PATH.
Without one, the container is what it always was (the image's python3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.runtimes.base import RunRequest

pytest.importorskip("docker")
from agent.runtimes.docker import DEFAULT_PATH, create_options, path_in_image

pytestmark = pytest.mark.no_docker_engine  # it names docker, starts no container

LAUNCH = ("python3", "-S", "-m", "harness.exec.launch", "python3", "train.py")


def request(tmp: Path, *argv: str, **fields: object) -> RunRequest:
    return RunRequest(
        container_id="d1-0",
        agent_id="a",
        argv=argv,
        run_dir=tmp / "run",
        image="img:1",
        **fields,  # type: ignore[arg-type]
    )


def test_without_a_named_python_the_image_decides(tmp_path: Path) -> None:
    options = create_options(request(tmp_path, *LAUNCH), tmp_path / "run", ["PATH=/opt/x"])
    assert options["entrypoint"] == ["python3"]
    assert "PATH" not in options["environment"]


def test_a_path_inside_the_image_runs_and_leads_its_path(tmp_path: Path) -> None:
    req = request(tmp_path, *LAUNCH, python="/opt/conda/envs/t/bin/python")
    image_env = ["LANG=C", "PATH=/opt/conda/bin:/usr/bin:/opt/conda/envs/t/bin"]
    options = create_options(req, tmp_path / "run", image_env)
    assert options["entrypoint"] == ["/opt/conda/envs/t/bin/python"]
    assert options["command"] == list(LAUNCH[1:])
    assert options["environment"]["PATH"] == "/opt/conda/envs/t/bin:/opt/conda/bin:/usr/bin"


def test_a_command_name_is_found_on_the_images_own_path(tmp_path: Path) -> None:
    options = create_options(request(tmp_path, *LAUNCH, python="python3.12"), tmp_path / "run")
    assert options["entrypoint"] == ["python3.12"]
    assert "PATH" not in options["environment"]


def test_other_commands_and_a_path_the_task_sets_are_left_alone(tmp_path: Path) -> None:
    req = request(tmp_path, "sh", "-c", "true", python="/v/bin/python3", environment={"PATH": "/a"})
    options = create_options(req, tmp_path / "run", ["PATH=/usr/bin"])
    assert options["entrypoint"] == ["sh"]
    assert options["environment"]["PATH"] == "/a"


@pytest.mark.parametrize(
    ("image_env", "python", "expected"),
    [
        (["PATH=/usr/bin:/bin"], "/v/bin/python3", "/v/bin:/usr/bin:/bin"),
        ([], "/v/bin/python3", f"/v/bin:{DEFAULT_PATH}"),
        (None, "/usr/bin/python3", "/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin"),
        (["PATH=/usr/bin"], "python3", None),
    ],
)
def test_path_in_image(image_env: list[str] | None, python: str, expected: str | None) -> None:
    assert path_in_image(image_env, python) == expected
