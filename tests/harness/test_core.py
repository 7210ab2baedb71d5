"""The Core API over an in-memory transport (on a cluster) and in local mode (off a cluster)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import harness as det
from harness._session import APIError, MasterUnreachable
from harness.core._storage import shared_fs_base
from tests.harness.fakes import FakeTransport


def _trial_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    config = {
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 7}},
        "checkpoint_storage": {
            "type": "shared_fs",
            "host_path": str(tmp_path / "shared"),
            "storage_path": "ckpts",
            # A container path that does not exist: the task runs as a plain process.
            "container_path": str(tmp_path / "no-such-mount"),
            # Where TensorBoard files are written before the sync (Determined's default: /tmp).
            "base_path": str(tmp_path / "tb"),
        },
        "data": {"url": "s3://x"},
    }
    env = {
        "DET_MASTER": "http://127.0.0.1:1",
        "DET_CLUSTER_ID": "c1",
        "DET_AGENT_ID": "agent-1",
        "DET_SLOT_IDS": "[0]",
        "DET_TASK_ID": "trial-5",
        "DET_ALLOCATION_ID": "trial-5.2",
        "DET_SESSION_TOKEN": "tok",
        "DET_TASK_TYPE": "TRIAL",
        "DET_TRIAL_ID": "5",
        "DET_EXPERIMENT_ID": "2",
        "DET_TRIAL_RUN_ID": "2",
        "DET_TRIAL_SEED": "99",
        "DET_HPARAMS": json.dumps({"lr": 0.5}),
        "DET_EXPERIMENT_CONFIG": json.dumps(config),
        "DET_STEPS_COMPLETED": "3",
    }
    env.update(extra)
    return env


@pytest.fixture
def on_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = _trial_env(tmp_path, DET_LATEST_CHECKPOINT="prev-uuid")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


class TestClusterInfo:
    def test_from_env(self, on_cluster: dict[str, str]) -> None:
        info = det.get_cluster_info()
        assert info is not None
        assert info.master_url == "http://127.0.0.1:1" and info.cluster_id == "c1"
        assert info.slot_ids == [0] and info.task_type == "TRIAL"
        assert info.latest_checkpoint == "prev-uuid"
        assert info.trial.trial_id == 5 and info.trial.experiment_id == 2
        assert info.trial.hparams == {"lr": 0.5} and info.trial.trial_seed == 99
        assert info.trial.steps_completed == 3 and info.trial.trial_run_id == 2
        assert info.trial._config["searcher"]["max_length"] == {"batches": 7}
        assert info.user_data == {"url": "s3://x"}

    @pytest.mark.parametrize(
        "missing", ["DET_MASTER", "DET_TASK_ID", "DET_SESSION_TOKEN", "DET_ALLOCATION_ID"]
    )
    def test_missing_variables_mean_off_cluster(self, tmp_path: Path, missing: str) -> None:
        env = _trial_env(tmp_path)
        del env[missing]
        assert det.get_cluster_info(env) is None

    def test_a_command_has_no_trial(self, tmp_path: Path) -> None:
        info = det.get_cluster_info(_trial_env(tmp_path, DET_TASK_TYPE="COMMAND"))
        assert info is not None and info.latest_checkpoint is None
        with pytest.raises(RuntimeError):
            info.trial  # noqa: B018


class TestSharedFsBase:
    @pytest.mark.parametrize(
        ("cfg", "mounted", "expected"),
        [
            ({"host_path": "/h", "storage_path": "s"}, True, "/determined_shared_fs/s"),
            ({"host_path": "/h", "storage_path": "s"}, False, "/h/s"),
            ({"host_path": "/h", "storage_path": "/h/a/b"}, True, "/determined_shared_fs/a/b"),
            ({"host_path": "/h", "storage_path": "/h/a/b"}, False, "/h/a/b"),
            ({"host_path": "/h", "container_path": "/m"}, True, "/m"),
            ({"host_path": "/h"}, False, "/h"),
        ],
    )
    def test_paths(self, cfg: dict[str, Any], mounted: bool, expected: str) -> None:
        assert shared_fs_base(cfg, mounted) == Path(expected)

    @pytest.mark.parametrize(
        ("run_dir", "mounted"),
        [("/run/determined", True), ("/var/lib/agent/runs/1.a.1-0", False), (None, False)],
    )
    def test_only_a_container_task_uses_the_mount(
        self,
        run_dir: str | None,
        mounted: bool,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A process task on a host that has a folder at the container path still uses
        host_path: the folder is not the trial's storage."""
        if run_dir is None:
            monkeypatch.delenv("DET_RUN_DIR", raising=False)
        else:
            monkeypatch.setenv("DET_RUN_DIR", run_dir)
        cfg = {"host_path": "/h", "container_path": str(tmp_path)}  # the folder exists
        assert shared_fs_base(cfg) == (tmp_path if mounted else Path("/h"))


def _answers(preempt_after: int | None = None) -> tuple[FakeTransport, list[int]]:
    polls: list[int] = []

    def handler(method: str, path: str, body: Any, params: Mapping[str, Any] | None) -> Any:
        if path.endswith("/signals/preemption"):
            polls.append(int((params or {})["timeout_seconds"]))
            if preempt_after is not None and len(polls) > preempt_after:
                return {"preempt": True}
            if polls[-1] > 0:
                time.sleep(0.05)  # a long poll that times out quickly in tests
            return {"preempt": False}
        if path == "/api/v1/runs/start":
            return {"storageId": 17}
        if path.startswith("/api/v1/checkpoints/"):
            return {"checkpoint": {"metadata": {"steps_completed": 4, "note": "x"}}}
        return {}

    return FakeTransport(handler), polls


class TestOnCluster:
    def test_metrics_and_progress(self, on_cluster: dict[str, str]) -> None:
        fake, _ = _answers()
        with det.core.init(session=fake) as ctx:
            ctx.train.report_training_metrics(
                10, {"loss": 0.5, "nan": float("nan")}, batch_metrics=[{"loss": 1}]
            )
            ctx.train.report_validation_metrics(10, {"loss": 0.25, "raw": b"x"})
            ctx.train.report_progress(0.5)
            ctx.train.set_status("training")
        metrics = fake.to("/api/v1/trials/5/metrics")
        assert [c.body for c in metrics] == [
            {
                "group": "training",
                "metrics": {
                    "trialId": 5,
                    "trialRunId": 2,
                    "stepsCompleted": 10,
                    "reportTime": None,
                    "metrics": {
                        "avgMetrics": {"loss": 0.5, "nan": "NaN"},
                        "batchMetrics": [{"loss": 1}],
                    },
                },
            },
            {
                "group": "validation",
                "metrics": {
                    "trialId": 5,
                    "trialRunId": 2,
                    "stepsCompleted": 10,
                    "reportTime": None,
                    "metrics": {"avgMetrics": {"loss": 0.25}, "batchMetrics": None},
                },
            },
        ]
        assert fake.to("/progress")[0].body == {"progress": 0.5, "is_raw": True}
        assert fake.to("/runner/metadata")[0].body == {"state": "training"}
        assert fake.to("/runs/start")[0].body["runId"] == 5

    def test_a_none_validation_value_is_refused(self, on_cluster: dict[str, str]) -> None:
        fake, _ = _answers()
        with det.core.init(session=fake) as ctx, pytest.raises(ValueError):
            ctx.train.report_validation_metrics(1, {"loss": None})

    def test_a_failed_report_surfaces_on_the_next_call(self, on_cluster: dict[str, str]) -> None:
        def handler(method: str, path: str, *_: Any) -> Any:
            if path.endswith("/metrics"):
                raise MasterUnreachable("gone for good")
            return {"preempt": False}

        ctx = det.core.init(session=FakeTransport(handler))
        ctx.train.report_training_metrics(1, {"loss": 1.0})
        time.sleep(0.2)
        with pytest.raises(MasterUnreachable):
            ctx.train.report_training_metrics(2, {"loss": 1.0})
        ctx.close()

    def test_checkpoint_store_report_and_restore(
        self, on_cluster: dict[str, str], tmp_path: Path
    ) -> None:
        fake, _ = _answers()
        with det.core.init(session=fake) as ctx:
            with ctx.checkpoint.store_path({"steps_completed": 4}) as (path, storage_id):
                (path / "model.bin").write_bytes(b"12345")
            with ctx.checkpoint.restore_path(storage_id) as restored:
                assert (restored / "model.bin").read_bytes() == b"12345"
            assert ctx.checkpoint.get_metadata(storage_id)["steps_completed"] == 4
        where = tmp_path / "shared" / "ckpts" / storage_id
        assert path == where
        assert json.loads((where / "metadata.json").read_text()) == {"steps_completed": 4}
        (report,) = fake.to("/api/v1/checkpoints")[:1]
        body = report.body
        assert report.method == "POST" and body["uuid"] == storage_id
        assert body["state"] == "STATE_COMPLETED" and body["storageId"] == 17
        assert body["resources"] == {
            "metadata.json": str(len('{\n  "steps_completed": 4\n}')),
            "model.bin": "5",
        }
        assert body["metadata"] == {"steps_completed": 4}
        assert body["taskId"] == "trial-5" and body["allocationId"] == "trial-5.2"
        assert body["training"] == {"trialId": 5}

    def test_checkpoint_needs_steps_completed(self, on_cluster: dict[str, str]) -> None:
        fake, _ = _answers()
        with (
            det.core.init(session=fake) as ctx,
            pytest.raises(ValueError, match="steps_comp"),
            ctx.checkpoint.store_path({}),
        ):
            pass

    def test_a_failed_save_leaves_no_checkpoint(
        self, on_cluster: dict[str, str], tmp_path: Path
    ) -> None:
        fake, _ = _answers()
        with (
            det.core.init(session=fake) as ctx,
            pytest.raises(OSError),
            ctx.checkpoint.store_path({"steps_completed": 1}) as (path, _),
        ):
            (path / "half").write_text("x")
            raise OSError("disk full")
        assert not list((tmp_path / "shared" / "ckpts").iterdir())
        assert not fake.to("/api/v1/checkpoints")

    def test_upload_download_and_delete(self, on_cluster: dict[str, str], tmp_path: Path) -> None:
        fake, _ = _answers()
        src = tmp_path / "src"
        (src / "sub").mkdir(parents=True)
        (src / "sub" / "w.bin").write_bytes(b"w")
        with det.core.init(session=fake) as ctx:
            storage_id = ctx.checkpoint.upload(src, {"steps_completed": 2})
            ctx.checkpoint.download(storage_id, tmp_path / "dst")
            assert (tmp_path / "dst" / "sub" / "w.bin").read_bytes() == b"w"
            ctx.checkpoint.delete(storage_id)
        assert not (tmp_path / "shared" / "ckpts" / storage_id).exists()
        patch = [c for c in fake.calls if c.method == "PATCH"]
        assert patch[0].body == {
            "checkpoints": [{"uuid": storage_id, "resources": {"resources": {}}}]
        }

    def test_searcher_operation_from_max_length(self, on_cluster: dict[str, str]) -> None:
        fake, _ = _answers()
        with det.core.init(session=fake) as ctx:
            assert ctx.searcher is not None
            assert ctx.searcher.get_configured_units() is det.core.Unit.BATCHES
            lengths = []
            with pytest.warns(FutureWarning):
                for op in ctx.searcher.operations():
                    lengths.append(op.length)
                    op.report_progress(7)
                    op.report_completed(0.1)
            assert lengths == [7]
        assert fake.to("/progress")[-1].body == {"progress": 1.0, "is_raw": True}

    def test_preemption_is_watched_and_acknowledged_once(self, on_cluster: dict[str, str]) -> None:
        gate = threading.Event()
        polls: list[int] = []

        def handler(method: str, path: str, body: Any, params: Mapping[str, Any] | None) -> Any:
            if path.endswith("/signals/preemption"):
                polls.append(int((params or {})["timeout_seconds"]))
                if polls[-1] > 0:
                    gate.wait(5)  # the long poll answers when the master preempts
                return {"preempt": gate.is_set()}
            return {}

        fake = FakeTransport(handler)
        with det.core.init(session=fake) as ctx:
            assert ctx.preempt.should_preempt() is False
            gate.set()
            deadline = time.monotonic() + 5
            while not ctx.preempt.should_preempt() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert ctx.preempt.should_preempt() is True
        assert polls[0] == 0 and all(p == 60 for p in polls[1:])
        acks = fake.to("/signals/ack_preemption")
        assert [(c.method, c.path) for c in acks] == [
            ("POST", "/api/v1/allocations/trial-5.2/signals/ack_preemption")
        ]

    def test_preemption_without_auto_ack(self, on_cluster: dict[str, str]) -> None:
        fake, _ = _answers(preempt_after=0)
        with det.core.init(session=fake) as ctx:
            assert ctx.preempt.should_preempt(auto_ack=False) is True
        assert not fake.to("/signals/ack_preemption")

    def test_the_watcher_retries_after_a_failed_poll(
        self, on_cluster: dict[str, str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from harness.core import _preempt

        monkeypatch.setattr(_preempt, "RETRY_AFTER_S", 0.01)
        calls = iter([MasterUnreachable("restarting"), {"preempt": True}])

        def handler(method: str, path: str, *_: Any) -> Any:
            if path.endswith("/signals/preemption"):
                answer = next(calls)
                if isinstance(answer, Exception):
                    raise answer
                return answer
            return {}

        with det.core.init(session=FakeTransport(handler)) as ctx:
            # As in Determined, a failed first call counts as "not preempted"; the retry sees it.
            deadline = time.monotonic() + 10
            while not ctx.preempt.should_preempt() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert ctx.preempt.should_preempt() is True

    def test_invalid_hp_reports_an_early_exit(self, on_cluster: dict[str, str]) -> None:
        fake, _ = _answers()
        with det.core.init(session=fake):
            raise det.InvalidHP("lr too large")
        (call,) = fake.to("/early_exit")
        assert call.body == {"reason": "EXITED_REASON_INVALID_HP"}

    def test_best_validation(self, on_cluster: dict[str, str]) -> None:
        def handler(method: str, path: str, *_: Any) -> Any:
            if "best_searcher_validation_metric" in path:
                raise APIError(method, path, 404, "no validations yet")
            return {"preempt": False}

        with det.core.init(session=FakeTransport(handler)) as ctx:
            assert ctx.train.get_experiment_best_validation() is None


class TestOffCluster:
    def test_local_mode(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        with det.core.init(checkpoint_storage=str(tmp_path)) as ctx:
            assert ctx.info is None and ctx.distributed.get_size() == 1
            ctx.train.report_training_metrics(1, {"loss": 2.0})
            assert ctx.preempt.should_preempt() is False
            with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, storage_id):
                (path / "w").write_text("w")
            assert ctx.checkpoint.get_metadata(storage_id) == {"steps_completed": 1}
            with ctx.checkpoint.restore_path(storage_id) as restored:
                assert (restored / "w").read_text() == "w"
        assert (tmp_path / storage_id / "w").exists()
        assert "training metrics at step 1" in capsys.readouterr().out

    def test_default_directory_is_the_user_data_dir(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
        with det.core.init() as ctx, ctx.checkpoint.store_path({"steps_completed": 0}) as (p, _):
            assert p.parent == tmp_path / "determined"

    def test_an_unsupported_storage_type(self) -> None:
        with pytest.raises(det.core.StorageNotSupported):
            det.core.init(checkpoint_storage={"type": "azure", "container": "c"})


def test_distributed_single_worker() -> None:
    dist = det.core.DistributedContext(
        rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1
    )
    assert dist.allgather(3) == [3] and dist.broadcast("x") == "x" and dist.gather(1) == [1]
    # several workers: tests/harness/core/test_distributed.py


def test_threads_end_with_the_context(on_cluster: dict[str, str]) -> None:
    fake, _ = _answers()
    before = {t.name for t in threading.enumerate()}
    with det.core.init(session=fake) as ctx:
        ctx.train.report_training_metrics(1, {"loss": 1.0})
    time.sleep(0.3)
    after = {t.name for t in threading.enumerate()}
    assert "metrics-sender" not in after - before
