"""TensorBoard: event files in AUTO mode, the sync to checkpoint storage, MANUAL uploads."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import pytest

from harness.core import DummyDistributedContext, TensorboardMode, TrainContext
from harness.core._tensorboard import (
    MetricWriter,
    TensorboardManager,
    base_path,
    storage_root,
    sync_path,
)
from tests.harness.fakes import FakeTransport


def test_paths_as_determined() -> None:
    assert base_path({}, "t.1", 0) == Path("/tmp/tensorboard-t.1-0")
    assert base_path({"base_path": "/b"}, "t.1", 2) == Path("/b/tensorboard-t.1-2")
    assert str(sync_path("c", 2, 5)) == "c/tensorboard/experiment/2/trial/5"
    assert storage_root({"type": "directory", "container_path": "/d"}) == Path("/d")
    assert storage_root({"type": "s3", "bucket": "b"}) is None


def _scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_auto_writes_event_files_and_syncs_them(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    now = [100.0]
    manager = TensorboardManager(tmp_path / "local", tmp_path / "store", clock=lambda: now[0])
    ctx = TrainContext(
        FakeTransport(),
        5,
        1,
        2,
        DummyDistributedContext(),
        TensorboardMode.AUTO,
        manager,
        MetricWriter(manager.base_path),
    )
    ctx.report_training_metrics(4, {"loss": 0.5, "note": "text"}, batch_metrics=[{"loss": 1.0}])
    ctx._sender.flush()  # written and synced on the sender thread, not in the training step
    assert list((tmp_path / "store").iterdir())  # synced at the report
    ctx.report_training_metrics(8, {"loss": 0.25})  # within 1 s: not synced now
    ctx.report_validation_metrics(8, {"loss": 0.2, "val_acc": 0.9})
    ctx.close()  # the last sync
    assert _scalars(tmp_path / "store") == {
        "Determined/loss": [(3, 1.0), (8, 0.25)],
        "Determined/val_loss": [(8, pytest.approx(0.2))],
        "Determined/val_acc": [(8, pytest.approx(0.9))],
    }
    with pytest.raises(RuntimeError, match="MANUAL"):
        ctx.upload_tensorboard_files()
    assert ctx.get_tensorboard_path() == tmp_path / "local"


def test_manual_uploads_what_the_user_selects(tmp_path: Path) -> None:
    manager = TensorboardManager(tmp_path / "local", tmp_path / "store")
    ctx = TrainContext(
        FakeTransport(), 5, 1, 2, DummyDistributedContext(), TensorboardMode.MANUAL, manager
    )
    run = ctx.get_tensorboard_path() / "run1"
    run.mkdir(parents=True)
    (run / "events.out.tfevents.1").write_bytes(b"e")
    (run / "skip.tmp").write_bytes(b"s")
    ctx.report_training_metrics(1, {"loss": 1.0})  # MANUAL: no event file of ours
    ctx.upload_tensorboard_files(
        selector=lambda p: p.suffix != ".tmp",
        mangler=lambda p, rank: p.with_name(f"{rank}-{p.name}"),
    )
    ctx.close()
    assert sorted(p.name for p in (tmp_path / "store").rglob("*") if p.is_file()) == [
        "0-events.out.tfevents.1"
    ]


def test_only_changed_files_are_copied_again(tmp_path: Path) -> None:
    (tmp_path / "local").mkdir()
    f = tmp_path / "local" / "a"
    f.write_bytes(b"1")
    manager = TensorboardManager(tmp_path / "local", tmp_path / "store")
    assert len(manager.sync(force=True)) == 1
    assert manager.sync(force=True) == []
    f.write_bytes(b"22")
    assert len(manager.sync(force=True)) == 1


def test_without_the_package_the_writer_is_a_no_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_import = builtins.__import__

    def no_tensorboard(name: str, *args: Any, **kw: Any) -> Any:
        if name.startswith("tensorboard"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_tensorboard)
    writer = MetricWriter(tmp_path / "tb")
    with caplog.at_level("INFO", logger="harness.core"):
        writer.on_train_step_end(1, {"loss": 1.0})
        writer.on_validation_step_end(1, {"loss": 1.0})
    assert not (tmp_path / "tb").exists()
    assert [r.message for r in caplog.records].count(
        "the tensorboard package is not installed: no TensorBoard event files"
    ) == 1


def test_a_cloud_storage_is_not_synced_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "a").write_bytes(b"1")
    manager = TensorboardManager(tmp_path / "local", None)
    with caplog.at_level("WARNING", logger="harness.core"):
        assert manager.sync(force=True) == [] and manager.sync(force=True) == []
    assert len(caplog.records) == 1


def test_tensorboard_trouble_never_fails_training(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("tensorboard")
    (tmp_path / "store").write_text("a file where the directory should be")
    manager = TensorboardManager(tmp_path / "local", tmp_path / "store" / "sub")
    fake = FakeTransport()
    ctx = TrainContext(
        fake,
        5,
        1,
        2,
        DummyDistributedContext(),
        TensorboardMode.AUTO,
        manager,
        MetricWriter(manager.base_path),
    )
    with caplog.at_level("WARNING", logger="harness.core"):
        ctx.report_training_metrics(1, {"loss": 1.0})
        ctx.report_training_metrics(2, {"loss": 0.5})
        ctx._sender.flush()
    assert len(fake.to("/metrics")) == 2
    assert "TensorBoard files were not written or synced" in caplog.text


def test_frequent_reports_write_event_files_in_batches_and_lose_nothing(tmp_path: Path) -> None:
    """A report every few milliseconds does not write an event file each time (the writer's
    work holds the GIL on the sender thread); every scalar is there after close."""
    pytest.importorskip("tensorboard")
    manager = TensorboardManager(tmp_path / "local", tmp_path / "store")
    writer = MetricWriter(manager.base_path)
    writes: list[int] = []
    add = writer.add

    def counting_add(items: Any) -> None:
        writes.append(len(items))
        add(items)

    writer.add = counting_add  # type: ignore[method-assign]
    ctx = TrainContext(
        FakeTransport(), 5, 1, 2, DummyDistributedContext(), TensorboardMode.AUTO, manager, writer
    )
    for step in range(1, 201):
        ctx.report_training_metrics(step, {"loss": 1.0 / step})
    ctx.close()
    assert len(writes) < 20, writes  # 200 reports in well under a second: a few writes
    assert sum(writes) == 200
    loss = _scalars(tmp_path / "store")["Determined/loss"]
    assert [s for s, _ in loss] == list(range(1, 201))
