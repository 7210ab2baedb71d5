"""CheckpointContext on directory storage: what is stored, what is reported, what is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.core import DummyDistributedContext
from harness.core._checkpoint import (
    CheckpointContext,
    DownloadMode,
    DummyCheckpointContext,
    merge_metadata,
    merge_resources,
)
from harness.core._storage import CheckpointNotFound, DirectoryStorageManager
from tests.harness.fakes import FakeTransport


def ckpt_context(base: Path, fake: FakeTransport) -> CheckpointContext:
    return CheckpointContext(
        DummyDistributedContext(),
        DirectoryStorageManager(base),
        fake,
        "trial-5",
        "trial-5.1",
        trial_id=5,
        storage_id=3,
        clock=lambda: "2026-01-01T00:00:00Z",
    )


def reports(fake: FakeTransport) -> list[dict[str, Any]]:
    return [c.body for c in fake.calls if c.method == "POST" and c.path == "/api/v1/checkpoints"]


@pytest.fixture
def src(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    (root / "sub").mkdir(parents=True)
    (root / "model.bin").write_bytes(b"12345")
    (root / "sub" / "opt.bin").write_bytes(b"xy")
    return root


class TestUpload:
    def test_upload_writes_metadata_and_reports_resources(self, tmp_path: Path, src: Path) -> None:
        fake = FakeTransport()
        ctx = ckpt_context(tmp_path / "store", fake)
        sid = ctx.upload(src, {"steps_completed": 7, "note": "n"})
        stored = tmp_path / "store" / sid
        meta = json.loads((stored / "metadata.json").read_text())
        assert meta == {"steps_completed": 7, "note": "n"}
        (body,) = reports(fake)
        assert body == {
            "uuid": sid,
            "state": "STATE_COMPLETED",
            "resources": {
                "metadata.json": str((stored / "metadata.json").stat().st_size),
                "model.bin": "5",
                "sub/": "0",
                "sub/opt.bin": "2",
            },
            "metadata": meta,
            "training": {"trialId": 5},
            "allocationId": "trial-5.1",
            "taskId": "trial-5",
            "reportTime": "2026-01-01T00:00:00Z",
            "storageId": 3,
        }

    def test_after_report_runs_once_the_master_knows(self, tmp_path: Path, src: Path) -> None:
        fake = FakeTransport()
        seen: list[int] = []
        ctx = CheckpointContext(
            DummyDistributedContext(),
            DirectoryStorageManager(tmp_path / "store"),
            fake,
            "t",
            "t.1",
            after_report=lambda: seen.append(len(reports(fake))),
        )
        ctx.upload(src, {"steps_completed": 1})
        assert seen == [1]

    def test_selector_uploads_only_what_it_picks(self, tmp_path: Path, src: Path) -> None:
        fake = FakeTransport()
        ctx = ckpt_context(tmp_path / "store", fake)
        sid = ctx.upload(src, {"steps_completed": 1}, selector=lambda n: n == "model.bin")
        assert sorted(p.name for p in (tmp_path / "store" / sid).iterdir()) == [
            "metadata.json",
            "model.bin",
        ]
        assert set(reports(fake)[0]["resources"]) == {"metadata.json", "model.bin"}

    def test_steps_completed_is_required(self, tmp_path: Path, src: Path) -> None:
        fake = FakeTransport()
        ctx = ckpt_context(tmp_path / "store", fake)
        for bad in (None, {}, {"steps_completed": -1}, {"steps_completed": True}):
            with pytest.raises(ValueError, match="steps_completed"):
                ctx.upload(src, bad)
        with pytest.raises(TypeError):
            ctx.upload(src, {"steps_completed": 1, "x": object()})
        assert not reports(fake)

    def test_a_file_vanishing_mid_upload_reports_nothing(self, tmp_path: Path, src: Path) -> None:
        fake = FakeTransport()
        ctx = ckpt_context(tmp_path / "store", fake)

        def selector(name: str) -> bool:
            if name == "sub/opt.bin":  # listed already; gone before it is copied
                shutil.rmtree(src / "sub")
            return True

        with pytest.raises(FileNotFoundError, match="vanished"):
            ctx.upload(src, {"steps_completed": 1}, selector=selector)
        assert not reports(fake)
        assert not list((tmp_path / "store").iterdir())  # the partial copy is gone too

    def test_the_ckpt_dir_missing(self, tmp_path: Path) -> None:
        ctx = ckpt_context(tmp_path / "store", FakeTransport())
        with pytest.raises(FileNotFoundError):
            ctx.upload(tmp_path / "nowhere", {"steps_completed": 1})
        with pytest.raises(RuntimeError, match="nothing to do"):
            ctx.upload(None, {"steps_completed": 1})

    def test_download_and_restore(self, tmp_path: Path, src: Path) -> None:
        fake = FakeTransport()
        ctx = ckpt_context(tmp_path / "store", fake)
        sid = ctx.upload(src, {"steps_completed": 1})
        ctx.download(sid, tmp_path / "d1")
        assert (tmp_path / "d1" / "sub" / "opt.bin").read_bytes() == b"xy"
        mode = DownloadMode.NoSharedDownload
        ctx.download(sid, tmp_path / "d2", mode, selector=lambda n: "/" in n)
        assert [p.name for p in (tmp_path / "d2").rglob("*") if p.is_file()] == ["opt.bin"]
        with ctx.restore_path(sid, selector=lambda n: False) as p:
            assert (p / "model.bin").read_bytes() == b"12345"  # shared_fs: in place

    def test_unknown_storage_id(self, tmp_path: Path) -> None:
        ctx = ckpt_context(tmp_path / "store", FakeTransport())
        with pytest.raises(CheckpointNotFound, match="not found"), ctx.restore_path("no-such"):
            pass
        with pytest.raises(CheckpointNotFound):
            ctx.download("no-such", tmp_path / "d")
        with pytest.raises(ValueError, match="invalid checkpoint id"), ctx.restore_path("../x"):
            pass


class TestStorePath:
    def test_store_path_in_place(self, tmp_path: Path) -> None:
        fake = FakeTransport()
        ctx = ckpt_context(tmp_path / "store", fake)
        with ctx.store_path({"steps_completed": 2}) as (path, sid):
            assert path == tmp_path / "store" / sid
            (path / "w").write_text("w")
        assert reports(fake)[0]["resources"]["w"] == "1"

    def test_the_directory_vanishing_reports_nothing(self, tmp_path: Path) -> None:
        fake = FakeTransport()
        ctx = ckpt_context(tmp_path / "store", fake)
        with (
            pytest.raises(FileNotFoundError, match="vanished"),
            ctx.store_path({"steps_completed": 2}) as (path, _),
        ):
            shutil.rmtree(path)
        assert not reports(fake)

    def test_non_chief_is_refused(self, tmp_path: Path) -> None:
        class Rank1(DummyDistributedContext):
            rank = 1

        ctx = CheckpointContext(Rank1(), DirectoryStorageManager(tmp_path), None, "t", "a")
        ctx._dist.rank = 1
        with pytest.raises(RuntimeError, match="non-chief"), ctx.store_path({"steps_completed": 1}):
            pass
        with pytest.raises(RuntimeError, match="non-chief"):
            ctx.upload(tmp_path, {"steps_completed": 1})


class TestDelete:
    def test_delete_all_and_by_glob(self, tmp_path: Path, src: Path) -> None:
        fake = FakeTransport()
        ctx = ckpt_context(tmp_path / "store", fake)
        sid = ctx.upload(src, {"steps_completed": 1})
        ctx.delete(sid, globs=["sub"])
        sid2 = ctx.upload(src, {"steps_completed": 2})
        ctx.delete(sid2)
        patches = [c.body for c in fake.calls if c.method == "PATCH"]
        left = patches[0]["checkpoints"][0]["resources"]["resources"]
        assert set(left) == {"metadata.json", "model.bin"}
        assert patches[1] == {"checkpoints": [{"uuid": sid2, "resources": {"resources": {}}}]}
        assert not (tmp_path / "store" / sid2).exists()

    def test_globs_that_climb_out_are_refused(self, tmp_path: Path, src: Path) -> None:
        (tmp_path / "precious").write_text("keep")
        fake = FakeTransport()
        ctx = ckpt_context(tmp_path / "store", fake)
        sid = ctx.upload(src, {"steps_completed": 1})
        for bad in (["../../*"], ["/etc/*"], ["../precious"]):
            with pytest.raises(ValueError):
                ctx.delete(sid, bad)
        assert (tmp_path / "precious").read_text() == "keep"
        assert not [c for c in fake.calls if c.method == "PATCH"]


def test_off_cluster_metadata_comes_from_the_checkpoint(tmp_path: Path) -> None:
    ctx = DummyCheckpointContext(DummyDistributedContext(), DirectoryStorageManager(tmp_path))
    with ctx.store_path({"steps_completed": 3, "k": [1]}) as (path, sid):
        (path / "x").write_text("x")
    assert ctx.get_metadata(sid) == {"steps_completed": 3, "k": [1]}


class TestMerging:
    @pytest.mark.parametrize(
        ("metas", "merged", "conflicts"),
        [
            ([{"a": 1}, {"b": 2}], {"a": 1, "b": 2}, {}),
            ([{"a": 1}, {"a": 1}], {"a": 1}, {}),
            ([{"a": [1]}, {"a": [2]}], None, {"/a": [0, 1]}),
            ([{"a": {"c": 1}}, {"a": {"d": 1}}], {"a": {"c": 1, "d": 1}}, {}),
            ([{"a": {"c": 1}}, {"a": 1}], None, {"/a": [0, 1]}),
            ([{"a": {"c": 1}}, {}, {"a": {"c": 2}}], None, {"/a/c": [0, 2]}),
        ],
    )
    def test_merge_metadata(self, metas: list, merged: dict | None, conflicts: dict) -> None:
        got, bad = merge_metadata(metas)
        assert bad == conflicts
        if merged is not None:
            assert got == merged

    def test_merge_resources(self) -> None:
        merged, shared = merge_resources(
            [{"d/": 0, "d/a": 1, "x": 5}, {"d/": 0, "d/b": 2, "x": 5}, {"d": 3}]
        )
        assert merged["d/a"] == 1 and merged["d/b"] == 2
        assert shared == {"x": [0, 1], "d": [0, 1, 2]}
