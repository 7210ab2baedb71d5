"""agent.task_venv: a task virtualenv made once over another environment's packages, reused,
never made over a folder that is not one, and blind to the agent's own packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.task_venv import (
    LAYER_FILE,
    MARKER,
    TaskVenvError,
    ensure_task_venv,
    layer_text,
    main,
    pip_wrapper,
    site_packages,
)

VERSION = sys.version_info[:3]


def run(python: Path, code: str, cwd: Path) -> str:
    """Run code in the venv's interpreter from a neutral folder, with a neutral environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(python), "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_pure_parts() -> None:
    assert layer_text(["/a/site-packages", "/b/dist-packages"]) == (
        "/a/site-packages\n/b/dist-packages\n"
    )
    assert pip_wrapper(Path("/v/bin/python")) == "#!/bin/sh\nexec '/v/bin/python' -m pip \"$@\"\n"
    assert pip_wrapper(Path("/it's/bin/python")).splitlines()[1].startswith("exec '/it'\\''s/")
    assert site_packages(Path("/v"), (3, 11, 7)) == Path("/v/lib/python3.11/site-packages")


class TestMaking:
    def test_a_venv_over_this_interpreter_sees_its_packages_after_its_own(
        self, tmp_path: Path
    ) -> None:
        venv = ensure_task_venv(tmp_path / "task-venv")
        assert venv.created and venv.interpreter == tmp_path / "task-venv" / "bin" / "python"
        own_site = site_packages(venv.path, VERSION)
        layer = (own_site / LAYER_FILE).read_text().splitlines()
        assert layer == list(venv.layer) and layer, "the base's site-packages are exposed"
        code = "import json, sys, pydantic; print(json.dumps([sys.prefix, sys.path]))"
        prefix, path = json.loads(run(venv.interpreter, code, tmp_path))
        assert prefix == str(venv.path)
        assert path.index(str(own_site)) < path.index(layer[0]), "the venv's own come first"
        marker = json.loads((venv.path / MARKER).read_text())
        assert marker["layer"] == layer and marker["version"] == list(VERSION)

    def test_the_agents_own_packages_are_not_importable_from_it(self, tmp_path: Path) -> None:
        venv = ensure_task_venv(tmp_path / "task-venv")
        code = (
            "import importlib.util as u; "
            "print([m for m in ('agent', 'controlplane', 'cli') if u.find_spec(m)])"
        )
        assert run(venv.interpreter, code, tmp_path) == "[]"

    def test_pip_in_the_venv_runs_the_venvs_interpreter(self, tmp_path: Path) -> None:
        venv = ensure_task_venv(tmp_path / "task-venv")
        pip = venv.path / "bin" / "pip"
        minor = f"pip{VERSION[0]}.{VERSION[1]}"
        for name in ("pip", "pip3", minor):
            assert os.access(venv.path / "bin" / name, os.X_OK)
        done = subprocess.run(
            [str(pip), "--version"], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        assert f"(python {VERSION[0]}.{VERSION[1]})" in done.stdout

    def test_a_second_call_reuses_it_and_keeps_what_was_installed(self, tmp_path: Path) -> None:
        first = ensure_task_venv(tmp_path / "task-venv")
        installed = site_packages(first.path, VERSION) / "mine.py"
        installed.write_text("X = 1\n")
        again = ensure_task_venv(tmp_path / "task-venv")
        assert not again.created and again.layer == first.layer
        assert installed.exists()

    def test_a_changed_base_rewrites_only_the_layer(self, tmp_path: Path) -> None:
        base = ensure_task_venv(tmp_path / "base")
        (site_packages(base.path, VERSION) / "frombase.py").write_text("B = 2\n")
        venv = ensure_task_venv(tmp_path / "task-venv")
        mine = site_packages(venv.path, VERSION) / "mine.py"
        mine.write_text("X = 1\n")
        layered = ensure_task_venv(tmp_path / "task-venv", base=str(base.interpreter))
        assert not layered.created and mine.exists()
        # Over a layered base, both its own packages and those under it are exposed.
        assert layered.layer == (str(site_packages(base.path, VERSION)), *base.layer)
        code = "import frombase, pydantic; print(frombase.B)"
        assert run(layered.interpreter, code, tmp_path) == "2"

    def test_a_venv_of_another_python_version_is_made_again(self, tmp_path: Path) -> None:
        venv = ensure_task_venv(tmp_path / "task-venv")
        marker = venv.path / MARKER
        record = json.loads(marker.read_text())
        marker.write_text(json.dumps({**record, "version": [3, 7, 0]}))
        stale = site_packages(venv.path, VERSION) / "built-for-3.7.py"
        stale.write_text("")
        again = ensure_task_venv(tmp_path / "task-venv")
        assert again.created and not stale.exists()
        assert json.loads(marker.read_text())["version"] == list(VERSION)

    def test_a_folder_that_is_not_ours_is_never_touched(self, tmp_path: Path) -> None:
        folder = tmp_path / "somebodys"
        folder.mkdir()
        (folder / "notes.txt").write_text("keep me")
        with pytest.raises(TaskVenvError, match="is not a task venv made by Resolute"):
            ensure_task_venv(folder)
        assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]

    def test_the_base_may_not_live_inside_the_venv(self, tmp_path: Path) -> None:
        with pytest.raises(TaskVenvError, match="lies inside"):
            ensure_task_venv(tmp_path / "v", base=str(tmp_path / "v" / "bin" / "python"))

    def test_a_base_that_does_not_run_is_reported(self, tmp_path: Path) -> None:
        with pytest.raises(TaskVenvError, match=r"asking .* for its paths"):
            ensure_task_venv(tmp_path / "v", base=str(tmp_path / "nothing" / "python"))
        assert not (tmp_path / "v").exists()


def test_command_line_prints_the_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "task-venv")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "task-venv" / "bin" / "python")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("")
    assert main([str(tmp_path / "taken")]) == 1
    assert "not a task venv made by Resolute" in capsys.readouterr().err
