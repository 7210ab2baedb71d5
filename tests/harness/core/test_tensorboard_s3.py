"""TensorBoard files synced to s3 checkpoint storage (moto server on 127.0.0.1)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from harness.core._tensorboard import TensorboardManager, storage_writer
from tests.harness.core.test_storage_s3 import bucket as bucket
from tests.harness.core.test_storage_s3 import endpoint as endpoint
from tests.harness.core.test_storage_s3 import raw


def test_files_become_objects_under_the_prefix(endpoint: str, bucket: str, tmp_path: Path) -> None:
    cfg = {
        "type": "s3",
        "bucket": bucket,
        "prefix": "p",
        "endpoint_url": endpoint,
        "access_key": "k",
        "secret_key": "s",
    }
    dest = storage_writer(cfg, PurePosixPath("c/tensorboard/experiment/2/trial/5"))
    assert callable(dest)
    local = tmp_path / "tb"
    (local / "run").mkdir(parents=True)
    (local / "run" / "events.out.tfevents.1").write_bytes(b"event")
    manager = TensorboardManager(local, dest)
    assert manager.sync(force=True) == ["run/events.out.tfevents.1"]
    body = (
        raw(endpoint)
        .get_object(
            Bucket=bucket, Key="p/c/tensorboard/experiment/2/trial/5/run/events.out.tfevents.1"
        )["Body"]
        .read()
    )
    assert body == b"event"


def test_an_unknown_storage_has_no_writer() -> None:
    assert storage_writer({"type": "azure"}, PurePosixPath("x")) is None
