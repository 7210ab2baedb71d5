"""gcs checkpoint storage: the real google-cloud-storage client against tests/support/fake_gcs.py
(plain HTTP on 127.0.0.1, reached through STORAGE_EMULATOR_HOST)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.cloud.storage")

from harness.core import (
    DummyDistributedContext,
    _storage_gcs,
)
from harness.core._checkpoint import CheckpointContext
from harness.core._storage import CheckpointNotFound, StorageError, storage_from_config
from tests.harness.fakes import FakeTransport
from tests.support.fake_gcs import FakeGCS

MiB = 1024 * 1024


@pytest.fixture
def gcs(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGCS]:
    fake = FakeGCS(page_size=3).start()
    fake.create_bucket("ckpts")
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", fake.url)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    # Small resumable chunks so a 9 MiB file takes several PUTs (and downloads several Ranges).
    monkeypatch.setattr(_storage_gcs, "CHUNK_SIZE", 1 * MiB)
    try:
        yield fake
    finally:
        fake.stop()


def make(bucket: str = "ckpts") -> tuple[Any, FakeTransport, CheckpointContext]:
    sm = storage_from_config({"type": "gcs", "bucket": bucket, "prefix": "exp/7"})
    fake = FakeTransport()
    return sm, fake, CheckpointContext(DummyDistributedContext(), sm, fake, "t", "t.1")


def reports(fake: FakeTransport) -> list[dict[str, Any]]:
    return [c.body for c in fake.calls if c.method == "POST" and c.path == "/api/v1/checkpoints"]


def test_roundtrip_resumable_multipart_ranges_paging(gcs: FakeGCS, tmp_path: Path) -> None:
    sm, fake, ctx = make()
    big = os.urandom(9 * MiB + 123)  # over 8 MiB: a resumable upload in 1 MiB chunks
    with ctx.store_path({"steps_completed": 5}) as (path, sid):
        (path / "model.bin").write_bytes(big)
        for i in range(4):
            (path / "parts" / f"{i}").parent.mkdir(exist_ok=True)
            (path / "parts" / f"{i}").write_bytes(b"p" * i)  # small: multipart uploads
    puts = [p for m, p in gcs.requests if m == "PUT"]
    assert len(puts) >= 10
    assert any("uploadType=multipart" in p for _, p in gcs.requests)
    assert f"exp/7/{sid}/model.bin" in gcs.names("ckpts")
    (body,) = reports(fake)
    assert body["resources"]["model.bin"] == str(len(big))
    assert set(sm.list_files(sid)) >= {"parts/", "parts/3", "metadata.json"}  # paged (3 a page)
    with ctx.restore_path(sid) as path:
        assert (path / "model.bin").read_bytes() == big
        assert (path / "parts" / "2").read_bytes() == b"pp"
    ctx.download(sid, tmp_path / "dl", selector=lambda n: n == "parts/1")
    assert [p.name for p in (tmp_path / "dl").rglob("*") if p.is_file()] == ["1"]
    ctx.delete(sid, ["parts"])
    patch = next(c.body for c in fake.calls if c.method == "PATCH")
    assert set(patch["checkpoints"][0]["resources"]["resources"]) == {"metadata.json", "model.bin"}
    ctx.delete(sid)
    assert gcs.names("ckpts") == []


def test_media_uploads_and_bucket_get(gcs: FakeGCS) -> None:
    """The fake takes simple media uploads too (other clients send them); the real client
    reads the object back and gets the bucket."""
    import urllib.request

    from google.cloud import storage

    url = f"{gcs.url}/upload/storage/v1/b/ckpts/o?uploadType=media&name=exp%2F7%2Fm%2Fx"
    with urllib.request.urlopen(urllib.request.Request(url, data=b"hello", method="POST")) as r:
        assert r.status == 200
    client = storage.Client()
    assert client.bucket("ckpts").blob("exp/7/m/x").download_as_bytes() == b"hello"
    assert client.get_bucket("ckpts").name == "ckpts"


def test_a_500_is_retried(gcs: FakeGCS) -> None:
    sm, fake, ctx = make()
    gcs.fail_next(2, 503)
    with ctx.store_path({"steps_completed": 1}) as (path, sid):
        (path / "w").write_text("w")
    assert reports(fake) and "w" in sm.list_files(sid)


def test_a_lasting_500_is_a_clear_error(gcs: FakeGCS, monkeypatch: pytest.MonkeyPatch) -> None:
    from google.api_core.retry import Retry
    from google.cloud.storage.retry import DEFAULT_RETRY

    monkeypatch.setattr(_storage_gcs, "DEFAULT_RETRY", DEFAULT_RETRY.with_timeout(1.0))
    assert isinstance(_storage_gcs.DEFAULT_RETRY, Retry)
    _, fake, ctx = make()
    gcs.fail_next(10_000, 500)
    with pytest.raises(StorageError, match=r"gcs bucket 'ckpts'.*HTTP 500.*gave up retrying"):  # noqa: SIM117
        with ctx.store_path({"steps_completed": 1}) as (path, _):
            (path / "w").write_text("w")
    assert not reports(fake)


def test_missing_bucket_and_refused_credentials(gcs: FakeGCS) -> None:
    _, fake, ctx = make("nope")
    with pytest.raises(StorageError, match=r"gcs bucket 'nope'.*404"):  # noqa: SIM117
        with ctx.store_path({"steps_completed": 1}) as (path, _):
            (path / "w").write_text("w")
    gcs.refuse_all = 403  # what GCS answers credentials without access to the bucket
    _, fake2, ctx2 = make()
    with pytest.raises(StorageError, match=r"gcs bucket 'ckpts'.*403"):  # noqa: SIM117
        with ctx2.store_path({"steps_completed": 1}) as (path, _):
            (path / "w").write_text("w")
    assert not reports(fake) and not reports(fake2)


def test_unknown_id_and_hostile_names(gcs: FakeGCS, tmp_path: Path) -> None:
    _, _, ctx = make()
    with pytest.raises(CheckpointNotFound, match="gone not found in gs://ckpts/exp/7"):  # noqa: SIM117
        with ctx.restore_path("gone"):
            pass
    gcs.put("ckpts", "exp/7/evil/../../escape", b"x")
    with pytest.raises(StorageError, match="climbs out"):
        ctx.download("evil", tmp_path / "dst")
    assert not (tmp_path / "escape").exists()


def test_a_file_vanishing_mid_upload(gcs: FakeGCS, tmp_path: Path) -> None:
    sm, fake, ctx = make()
    src = tmp_path / "src"
    src.mkdir()
    for name in "abc":
        (src / name).write_text(name)
    original = sm._put

    def lose_b(local: Path, key: str) -> None:
        if local.name == "b":
            local.unlink()
        original(local, key)

    sm._put = lose_b
    with pytest.raises(FileNotFoundError, match="vanished"):
        ctx.upload(src, {"steps_completed": 1})
    assert not reports(fake)
    assert gcs.names("ckpts") == []
