"""A task of a cluster never runs off-cluster silently: ``core.init()`` inside a task (DET_TASK_ID
or DET_RUN_DIR set) that finds no cluster info, or cannot reach its master, raises NotOnCluster
and logs why."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from harness import core
from harness._session import MasterUnreachable
from tests.harness.fakes import FakeTransport
from tests.harness.test_core import _trial_env


@pytest.fixture(autouse=True)
def no_det_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in [k for k in os.environ if k.startswith("DET_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("DET_METRICS_FILE", str(tmp_path / "metrics.jsonl"))


@pytest.mark.parametrize("variable", ["DET_TASK_ID", "DET_RUN_DIR"])
def test_a_task_without_cluster_info(
    variable: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(variable, str(tmp_path) if variable == "DET_RUN_DIR" else "task-1")
    monkeypatch.setenv("DET_MASTER", "http://127.0.0.1:1")  # not enough on its own
    with caplog.at_level(logging.ERROR, "harness.core"), pytest.raises(core.NotOnCluster) as err:
        core.init()
    message = str(err.value)
    assert f"{variable}=" in message and "found no cluster info" in message
    assert "DET_TASK_TYPE" in message and "DET_MASTER" not in message.split("found")[1]
    assert message in caplog.text


def test_off_a_cluster_the_local_mode_stays(tmp_path: Path) -> None:
    with core.init(checkpoint_storage=str(tmp_path / "ckpt")) as ctx:
        assert ctx.info is None and isinstance(ctx.train, core.DummyTrainContext)


def test_a_trial_that_cannot_reach_its_master(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for key, value in _trial_env(tmp_path).items():
        monkeypatch.setenv(key, value)

    def unreachable(*_: Any) -> Any:
        raise MasterUnreachable("connection refused for 180 s")

    with caplog.at_level(logging.ERROR, "harness.core"), pytest.raises(core.NotOnCluster) as err:
        core.init(session=FakeTransport(unreachable))
    assert "cannot reach the master at http://127.0.0.1:1" in str(err.value)
    assert "connection refused" in caplog.text
