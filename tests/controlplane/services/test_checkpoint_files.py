"""The storage edge of GC against real storage: a local folder, and GCS through the real
google-cloud-storage client and tests/support/fake_gcs.py (S3 is covered by the live GC tests
on a moto server). A deletion is done only when nothing is left."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.services.checkpoint_files import (
    CheckpointDeleteError,
    delete_checkpoint_files,
    remove_checkpoint_files,
)


def test_directory_storage(tmp_path: Path) -> None:
    ckpt = str(uuid.uuid4())
    (tmp_path / ckpt / "sub").mkdir(parents=True)
    (tmp_path / ckpt / "sub" / "a").write_text("a")
    (tmp_path / ckpt / "b.tmp").write_text("bb")
    storage = {"type": "directory", "container_path": str(tmp_path)}
    assert remove_checkpoint_files(storage, ckpt, ["*.tmp"]) == {"sub/": 0, "sub/a": 1}
    delete_checkpoint_files(storage, ckpt)
    assert not (tmp_path / ckpt).exists()
    delete_checkpoint_files(storage, ckpt)  # already gone counts as deleted


@pytest.mark.parametrize("bad", ["../etc", "a/b", "x\x00y"])
def test_a_uuid_that_would_leave_the_storage_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(CheckpointDeleteError):
        delete_checkpoint_files({"type": "shared_fs", "host_path": str(tmp_path)}, bad)


def test_a_folder_that_cannot_be_removed_is_not_deleted(tmp_path: Path) -> None:
    ckpt = str(uuid.uuid4())
    # A file where the checkpoint folder should be: rmtree cannot remove it as a folder, and
    # the checkpoint must not be reported deleted (this holds for root too, unlike a chmod).
    (tmp_path / ckpt).write_text("not a folder")
    with pytest.raises(CheckpointDeleteError, match=ckpt):
        delete_checkpoint_files({"type": "shared_fs", "host_path": str(tmp_path)}, ckpt)
    assert (tmp_path / ckpt).exists()


def _many_files(base: Path, suffix: str) -> str:
    """A new checkpoint of 500 files in 10 folders (enough for two deleters to collide)."""
    ckpt = str(uuid.uuid4())
    for d in range(10):
        (base / ckpt / f"d{d}").mkdir(parents=True)
        for f in range(50):
            (base / ckpt / f"d{d}" / f"f{f}{suffix}").write_text("x")
    return ckpt


def _delete_twice_at_once(
    storage: dict[str, str], ckpt: str, globs: list[str] | None = None
) -> list[str]:
    start = threading.Barrier(2)
    errors: list[str] = []

    def delete() -> None:
        start.wait()
        try:
            if globs is None:
                delete_checkpoint_files(storage, ckpt)
            else:
                remove_checkpoint_files(storage, ckpt, globs)
        except CheckpointDeleteError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=delete) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_two_deletions_of_one_checkpoint_at_once_both_succeed(tmp_path: Path) -> None:
    """The master's GC job and another pass (a woken job, an explicit tick) may delete the same
    checkpoint at once: what the other one removed first is gone, as asked, not a failure (a
    failure leaves the checkpoint shown as not deleted until a retry). Without that, nearly
    every round here failed on 'No such file or directory'."""
    storage = {"type": "shared_fs", "host_path": str(tmp_path)}
    for _ in range(5):
        ckpt = _many_files(tmp_path, "")
        assert _delete_twice_at_once(storage, ckpt) == []
        assert not (tmp_path / ckpt).exists()


def test_two_removals_of_the_same_files_at_once_both_succeed(tmp_path: Path) -> None:
    """The same race for `det checkpoint rm` globs: both see the files gone, the rest kept."""
    storage = {"type": "shared_fs", "host_path": str(tmp_path)}
    for _ in range(5):
        ckpt = _many_files(tmp_path, ".tmp")
        (tmp_path / ckpt / "model.txt").write_text("model")
        assert _delete_twice_at_once(storage, ckpt, ["**/*.tmp"]) == []
        left = remove_checkpoint_files(storage, ckpt, [])
        assert {name for name in left if not name.endswith("/")} == {"model.txt"}


@pytest.fixture
def gcs(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    pytest.importorskip("google.cloud.storage")
    from tests.support.fake_gcs import FakeGCS

    fake = FakeGCS(page_size=2).start()
    fake.create_bucket("ckpts")
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", fake.url)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    try:
        yield fake
    finally:
        fake.stop()


def test_gcs_storage(gcs: object) -> None:
    keep, drop = str(uuid.uuid4()), str(uuid.uuid4())
    for ckpt in (keep, drop):
        for name in ("model.bin", "a/b.txt", "a/c.tmp"):
            gcs.put("ckpts", f"exp/{ckpt}/{name}", b"xyz")  # type: ignore[attr-defined]
    storage = {"type": "gcs", "bucket": "ckpts", "prefix": "exp"}
    left = remove_checkpoint_files(storage, keep, ["**/*.tmp"])
    assert left == {"a/": 0, "a/b.txt": 3, "model.bin": 3}
    delete_checkpoint_files(storage, drop)
    names = gcs.names("ckpts")  # type: ignore[attr-defined]
    assert sorted(names) == [f"exp/{keep}/a/b.txt", f"exp/{keep}/model.bin"]


def test_gcs_failure_is_not_a_deletion(gcs: object) -> None:
    ckpt = str(uuid.uuid4())
    gcs.put("ckpts", f"exp/{ckpt}/model.bin", b"x")  # type: ignore[attr-defined]
    with pytest.raises(CheckpointDeleteError):
        delete_checkpoint_files({"type": "gcs", "bucket": "no-such-bucket", "prefix": "exp"}, ckpt)
    assert gcs.names("ckpts") == [f"exp/{ckpt}/model.bin"]  # type: ignore[attr-defined]
