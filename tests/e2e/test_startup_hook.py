"""`startup-hook.sh` at the top of a context directory is sourced before the task's command, in
a trial and in a command (issue 39, finding 7), on `det deploy local` (the process runtime, and a
trial on the docker runtime): what it exports reaches the command, as in Determined. Notebooks,
TensorBoards, shells (tests/e2e/test_shell_process.py) and generic tasks start through the same
launcher (harness.exec.launch), whose own tests hold the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import Deploy, docker_image_config, wait_for

pytestmark = pytest.mark.slow

HOOK = 'export HOOKED="yes, from $(basename "$PWD")"\necho "startup hook sourced"\n'
TRIAL = """\
import os
print("trial sees HOOKED=" + os.environ.get("HOOKED", "nothing"), flush=True)
"""


def test_the_hook_runs_before_trials_and_commands(deploy: Deploy, tmp_path: Path) -> None:
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "startup-hook.sh").write_text(HOOK)
    (context / "report.py").write_text(TRIAL)
    d = deploy(agents=1, slots=1)

    exp_id = d.create_experiment(
        {
            "name": "hooked",
            "entrypoint": "python3 report.py",
            "searcher": {"name": "single", "metric": "x", "max_length": 1},
            "max_restarts": 0,
        },
        context,
        tmp_path,
    )
    trial = d.trial_of(exp_id, timeout=60)
    lines = wait_for(
        lambda: (got := d.trial_logs(trial["id"])) and any("trial sees" in x for x in got) and got,
        120,
        "the trial's report",
    )
    assert "startup hook sourced" in lines
    # the working directory the hook ran in is the task's, where the context was unpacked
    assert any(line.startswith("trial sees HOOKED=yes, from ") for line in lines), lines

    ran = d.det("cmd", "run", "-c", str(context), "sh", "-c", 'echo "command sees $HOOKED"')
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "startup hook sourced" in ran.stdout and "command sees yes, from " in ran.stdout


def test_the_hook_runs_in_a_docker_task(deploy: Deploy, tmp_path: Path) -> None:
    docker = docker_image_config()  # skips without a Docker engine
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "startup-hook.sh").write_text(HOOK)
    (context / "report.py").write_text(TRIAL)
    d = deploy(agents=1, slots=1, runtime="docker")
    exp_id = d.create_experiment(
        {
            "name": "hooked-docker",
            "entrypoint": "python3 report.py",
            "searcher": {"name": "single", "metric": "x", "max_length": 1},
            "max_restarts": 0,
            **docker,
        },
        context,
        tmp_path,
    )
    trial = d.trial_of(exp_id, timeout=60)
    lines = wait_for(
        lambda: (got := d.trial_logs(trial["id"])) and any("trial sees" in x for x in got) and got,
        180,
        "the trial's report",
    )
    assert "startup hook sourced" in lines
    assert any(line.startswith("trial sees HOOKED=yes, from ") for line in lines), lines
