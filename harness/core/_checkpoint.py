"""CheckpointContext: save a checkpoint into storage and report it; find it again.

``store_path`` hands out the checkpoint's own directory in storage (shared_fs writes in place),
writes ``metadata.json`` beside the user's files, and reports the checkpoint with
``POST /api/v1/checkpoints`` (idempotent by uuid, so a retried report is harmless).
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness._session import Transport
from harness.core._distributed import DistributedContext
from harness.core._storage import DirectoryStorageManager, resources_of

METADATA_FILE = "metadata.json"


class DownloadMode(enum.Enum):
    LocalWorkersShareDownload = "LOCAL_WORKERS_SHARE_DOWNLOAD"
    NoSharedDownload = "NO_SHARED_DOWNLOAD"


def _check_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    meta = dict(metadata or {})
    steps = meta.get("steps_completed")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(
            "checkpoint metadata needs a 'steps_completed' item (a non-negative integer): the "
            "master files checkpoints by the step they were taken at"
        )
    json.dumps(meta)  # refuse what cannot be stored before anything is written
    return meta


def _write_metadata(path: Path, metadata: dict[str, Any]) -> None:
    (path / METADATA_FILE).write_text(json.dumps(metadata, indent=2, sort_keys=True))


class CheckpointContext:
    """Checkpoints of this trial in its experiment's checkpoint storage."""

    def __init__(
        self,
        dist: DistributedContext,
        storage_manager: DirectoryStorageManager,
        session: Transport | None,
        task_id: str,
        allocation_id: str,
        *,
        trial_id: int | None = None,
        storage_id: int | None = None,
    ) -> None:
        self._dist = dist
        self._storage = storage_manager
        self._session = session
        self._task_id = task_id
        self._allocation_id = allocation_id
        self._trial_id = trial_id
        self._storage_db_id = storage_id

    def _chief_only(self, what: str) -> None:
        if self._dist.rank != 0:
            raise RuntimeError(f"only the chief (rank 0) may call {what}()")

    def _report(self, storage_id: str, metadata: dict[str, Any], path: Path) -> None:
        if self._session is None:
            return
        body: dict[str, Any] = {
            "uuid": storage_id,
            "state": "STATE_COMPLETED",
            "resources": {k: str(v) for k, v in resources_of(path).items()},
            "metadata": metadata,
            "training": {"trialId": self._trial_id} if self._trial_id is not None else {},
            "allocationId": self._allocation_id,
            "taskId": self._task_id,
            "reportTime": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),  # noqa: UP017
        }
        if self._storage_db_id is not None:
            body["storageId"] = self._storage_db_id
        self._session.request("POST", "/api/v1/checkpoints", body=body)

    @contextlib.contextmanager
    def store_path(
        self, metadata: dict[str, Any] | None = None, *, shard: bool = False
    ) -> Iterator[tuple[Path, str]]:
        """Yield (directory to save into, storage id); on a clean exit, record the checkpoint."""
        self._chief_only("store_path")
        meta = _check_metadata(metadata)
        storage_id = str(uuid.uuid4())
        path = self._storage.prepare(storage_id)
        try:
            yield path, storage_id
        except BaseException:
            self._storage.delete(storage_id)  # a half-written checkpoint must not be restored
            raise
        _write_metadata(path, meta)
        self._report(storage_id, meta, path)

    def upload(
        self, ckpt_dir: str | Path, metadata: dict[str, Any] | None = None, *, shard: bool = False
    ) -> str:
        """Copy ``ckpt_dir``'s contents into storage under a new id, report it, return the id."""
        with self.store_path(metadata) as (path, storage_id):
            shutil.copytree(Path(ckpt_dir), path, dirs_exist_ok=True)
        return storage_id

    def download(
        self,
        storage_id: str,
        ckpt_dir: str | Path,
        download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
    ) -> None:
        self._storage.download(storage_id, Path(ckpt_dir))

    @contextlib.contextmanager
    def restore_path(
        self,
        storage_id: str,
        download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
    ) -> Iterator[Path]:
        """Yield the checkpoint's directory (shared storage: in place, nothing is copied)."""
        yield self._storage.restore_path(storage_id)

    def get_metadata(self, storage_id: str) -> dict[str, Any]:
        if self._session is not None:
            answer = self._session.request("GET", f"/api/v1/checkpoints/{storage_id}")
            return dict(((answer or {}).get("checkpoint") or {}).get("metadata") or {})
        path = self._storage.restore_path(storage_id) / METADATA_FILE
        return json.loads(path.read_text()) if path.exists() else {}

    def delete(self, storage_id: str) -> None:
        self._chief_only("delete")
        self._storage.delete(storage_id)
        if self._session is not None:
            self._session.request(
                "PATCH",
                "/api/v1/checkpoints",
                body={"checkpoints": [{"uuid": storage_id, "resources": {"resources": {}}}]},
            )


class DummyCheckpointContext(CheckpointContext):
    """Off-cluster: checkpoints go to a local directory and are reported to nobody."""

    def __init__(self, dist: DistributedContext, storage_manager: DirectoryStorageManager) -> None:
        super().__init__(dist, storage_manager, None, "", "")


def default_local_storage() -> Path:
    """Determined's off-cluster default: the user's data directory."""
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "determined"
