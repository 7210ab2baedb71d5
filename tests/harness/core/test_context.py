"""core.init() and Context: what each mode builds, from the same user code."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness as det
from harness.core import SearcherContextMissing, SearcherOperation, TensorboardMode
from tests.harness.fakes import FakeTransport
from tests.harness.test_core import _trial_env
from tests.harness.test_python_versions import find_python


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = _trial_env(tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def test_off_cluster_metrics_go_to_the_console_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DET_METRICS_FILE", str(tmp_path / "metrics.jsonl"))
    with det.core.init(checkpoint_storage=str(tmp_path / "ckpt")) as ctx:
        ctx.train.report_training_metrics(1, {"loss": 2.0})
        ctx.train.report_validation_metrics(1, {"loss": 1.5})
        assert ctx.info is None and ctx.preempt.should_preempt() is False
        with pytest.warns(FutureWarning):
            assert [op.length for op in _complete(ctx.searcher.operations())] == [1]
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["group"], r["metrics"]) for r in lines] == [
        ("training", {"loss": 2.0}),
        ("validation", {"loss": 1.5}),
    ]
    assert "validation metrics at step 1" in capsys.readouterr().out


def _complete(ops: Iterator[SearcherOperation]) -> list[SearcherOperation]:
    done = []
    for op in ops:
        op.report_completed(0.0)
        done.append(op)
    return done


def test_a_multi_slot_task_needs_a_distributed_context(
    cluster: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DET_SLOT_IDS", "[0, 1]")
    with pytest.raises(ValueError, match="DistributedContext"):
        det.core.init(session=FakeTransport())


def test_on_cluster_parts(cluster: dict[str, str], tmp_path: Path) -> None:
    config = json.loads(cluster["DET_EXPERIMENT_CONFIG"])
    del config["searcher"]["max_length"]
    fake = FakeTransport()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DET_EXPERIMENT_CONFIG", json.dumps(config))
        ctx = det.core.init(session=fake, tensorboard_mode=TensorboardMode.MANUAL)
    with ctx:
        assert isinstance(ctx.searcher, SearcherContextMissing)
        assert ctx.train.get_tensorboard_path() == tmp_path / "tb" / "tensorboard-trial-5.2-0"
        ctx.alert(title="diverged", description="loss is NaN", level="warn")
    (call,) = fake.to("/webhooks/custom")
    assert call.body == {
        "data": {"title": "diverged", "description": "loss is NaN", "level": "LOG_LEVEL_WARNING"},
        "experimentId": 2,
        "trialId": 5,
    }


def test_a_command_task_reports_nothing(
    cluster: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DET_TASK_TYPE", "COMMAND")
    fake = FakeTransport()
    with det.core.init(session=fake, checkpoint_storage=str(tmp_path / "c")) as ctx:
        ctx.train.report_training_metrics(1, {"loss": 1.0})
        assert ctx.info is not None and ctx.preempt.should_preempt() is False
        with pytest.raises(ValueError, match="trial"):
            ctx.alert("x")
    assert fake.calls == []


def test_lazy_names() -> None:
    import harness

    assert harness.RendezvousInfo is harness._info.RendezvousInfo
    assert {"RendezvousInfo", "ResourcesInfo"} <= set(dir(harness))


ON_CLUSTER_CHILD = r"""
import json, os, sys, tempfile
import harness as det

class Master:
    def __init__(self):
        self.calls = []
    def request(self, method, path, **kw):
        self.calls.append(path)
        if path.endswith("/signals/preemption"):
            return {"preempt": True}
        if path.endswith("/runs/start"):
            return {"storageId": 1}
        return {}

master = Master()
with det.core.init(session=master) as ctx:
    ctx.train.report_training_metrics(1, {"loss": float("nan")})
    ctx.train.report_validation_metrics(1, {"loss": 0.5})
    ctx.train.report_progress(0.5)
    ctx.train.set_status("ok")
    assert ctx.preempt.should_preempt() is True
    for op in ctx.searcher.operations():
        op.report_completed(0.5)
print(json.dumps(sorted(set(p.rsplit("/", 1)[-1] for p in master.calls))))
"""


@pytest.mark.slow
@pytest.mark.parametrize("minor", range(8, 14))
def test_on_cluster_core_on_python_3_x(minor: int, tmp_path: Path) -> None:
    """The on-cluster parts (metrics thread, watcher, TensorBoard, info) on old Pythons too."""
    python = find_python(minor)
    if python is None:
        pytest.skip(f"python3.{minor} is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    env.update(_trial_env(tmp_path))
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[3])
    out = subprocess.run(
        [python, "-c", ON_CLUSTER_CHILD],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.splitlines()[-1]) == [
        "ack_preemption",
        "metadata",
        "metrics",
        "preemption",
        "progress",
        "start",
    ]


def test_a_checkpoint_reaches_the_master_after_every_report_made_before_it(
    cluster: dict[str, str],
) -> None:
    """A spot instance can be reclaimed the moment its trial has checkpointed: the trial resumes
    from that checkpoint, so the reports made before it must be at the master by then, not
    waiting in the reporting thread's batch (Determined's reports are synchronous)."""
    fake = FakeTransport(lambda _m, path, _b, _p: {"preempt": False} if "preempt" in path else {})
    with det.core.init(session=fake, tensorboard_mode=TensorboardMode.MANUAL) as ctx:
        for step in (1, 2, 3):  # the first goes at once; the others wait for the batch interval
            ctx.train.report_training_metrics(step, {"loss": 1.0 / step})
        with ctx.checkpoint.store_path({"steps_completed": 3}) as (path, _uuid):
            (path / "state").write_text("3")
        with fake.lock:
            before = [c for c in fake.calls if "/metrics" in c.path]
    steps = [
        r["metrics"]["stepsCompleted"] for c in before for r in c.body.get("reports", [c.body])
    ]
    assert steps == [1, 2, 3]
