"""The agent's start-up lines about task users: as root, a work dir under a folder others cannot
pass through is a warning on the process runtime, where tasks walk host paths, and none on docker,
where tasks see their run dir as a bind mount (cli/deploy/task_access.py says the same)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from agent.__main__ import say_task_users

pytestmark = [
    pytest.mark.no_docker_engine,  # it names docker, starts no container
    pytest.mark.skipif(os.geteuid() != 0, reason="only an agent run as root switches users"),
]

WARNING = "tasks will fail to start until those folders grant others search permission"


def closed_work_dir(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    work = home / "agent"
    work.mkdir(parents=True)
    home.chmod(0o700)
    return work


def test_process_runtime_warns_about_a_closed_home(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    work = closed_work_dir(tmp_path)
    with caplog.at_level(logging.INFO, logger="agent"):
        say_task_users(work, [])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and WARNING in warnings[0] and str(tmp_path / "home") in warnings[0]


def test_docker_runtime_does_not_warn_about_the_folders_above_its_bind_mounts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    work = closed_work_dir(tmp_path)
    with caplog.at_level(logging.INFO, logger="agent"):
        say_task_users(work, [], bind_mounted=True)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # It still opens the work dir itself to task users (pylib is read through its mount).
    assert work.stat().st_mode & 0o011 == 0o011
