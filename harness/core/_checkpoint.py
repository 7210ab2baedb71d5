"""CheckpointContext: save a checkpoint into storage and report it; find it again.

As in Determined 0.38.1: ``upload``/``store_path`` write ``metadata.json`` into the checkpoint,
push it to storage and then report it with ``POST /api/v1/checkpoints`` (idempotent by uuid, so
a retried report is harmless); the report comes only after every file is in storage, so a
failed save never leaves a COMPLETED checkpoint behind. ``delete`` reports what is left with
``PATCH /api/v1/checkpoints``.

``shard=True`` makes ``upload``/``store_path`` a collective: the chief picks the storage id and
broadcasts it, every rank pushes its own files, the chief merges the metadata and resources of
all ranks and reports once. Two ranks offering different files under one name is an error on
every rank (identical copies are uploaded once). Every rank learns whether all uploads
succeeded, so one rank's failure fails them all and nothing is reported.

Downloads (``download``/``restore_path``) share one copy per node by default
(``DownloadMode.LocalWorkersShareDownload``): the local chief downloads the union of what the
local workers' selectors ask for and hands the path round.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import logging
import os
import shutil
import tempfile
import typing
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness._session import Transport
from harness.core._distributed import DistributedContext
from harness.core._storage import (
    DirectoryStorageManager,
    StorageManager,
    list_directory,
    safe_relpath,
)

logger = logging.getLogger("harness.core")

METADATA_FILE = "metadata.json"
Selector = typing.Callable[[str], bool]  # typing: subscriptable on 3.8
PathLike = typing.Union[str, "os.PathLike[str]"]


class DownloadMode(enum.Enum):
    LocalWorkersShareDownload = "LOCAL_WORKERS_SHARE_DOWNLOAD"
    NoSharedDownload = "NO_SHARED_DOWNLOAD"


class CheckpointConflict(RuntimeError):
    """Ranks of a sharded checkpoint disagree: one file name or metadata key, two contents."""


# ---------------------------------------------------------------------------------------------
# Pure decisions.


def check_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    meta = dict(metadata or {})
    steps = meta.get("steps_completed")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(
            "checkpoint metadata needs a 'steps_completed' item (a non-negative integer): the "
            "master files checkpoints by the step they were taken at"
        )
    json.dumps(meta)  # refuse what cannot be stored before anything is written
    return meta


def merge_metadata(all_metadata: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(merged, conflicts): dicts merge key by key; one key with two values is a conflict.

    ``conflicts`` maps ``/a/b`` key paths to the ranks that gave that key.
    """
    merged: dict[str, Any] = {}
    givers: dict[str, list[int]] = {}
    conflicts: dict[str, list[int]] = {}

    def merge(into: dict[str, Any], new: dict[str, Any], rank: int, path: str) -> None:
        for key, value in new.items():
            full = f"{path}/{key}"
            givers.setdefault(full, []).append(rank)
            if key not in into:
                into[key] = {} if isinstance(value, dict) else value
                if isinstance(value, dict):
                    merge(into[key], value, rank, full)
            elif isinstance(value, dict) and isinstance(into[key], dict):
                merge(into[key], value, rank, full)
            elif into[key] != value:
                conflicts[full] = list(givers[full])

    for rank, meta in enumerate(all_metadata):
        merge(merged, meta or {}, rank, "")
    return merged, conflicts


def merge_resources(
    all_resources: list[dict[str, int]],
) -> tuple[dict[str, int], dict[str, list[int]]]:
    """(union of every rank's resources, {file name: ranks} for files more than one rank has)."""
    merged: dict[str, int] = {}
    owners: dict[str, list[int]] = {}
    for rank, resources in enumerate(all_resources):
        for name, size in resources.items():
            merged[name] = size
            owners.setdefault(name.rstrip("/"), []).append(rank)
    files = {n for r in all_resources for n in r if not n.endswith("/")}
    shared = {n: ranks for n, ranks in owners.items() if n in files and len(ranks) > 1}
    return dict(sorted(merged.items())), shared


def conflict_message(kind: str, conflicts: dict[str, list[int]]) -> str:
    lines = [f"    {name} given by ranks {ranks}" for name, ranks in sorted(conflicts.items())]
    return f"refusing to save a sharded checkpoint with {kind} conflicts:\n" + "\n".join(lines)


def _digest(path: Path) -> str:
    if path.is_dir():
        return "<a directory>"
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write_metadata(path: Path, metadata: dict[str, Any]) -> None:
    with open(Path(path) / METADATA_FILE, "w") as f:
        json.dump(metadata, f, indent=2)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")  # noqa: UP017


class CheckpointContext:
    """Checkpoints of this trial in its experiment's checkpoint storage."""

    def __init__(
        self,
        dist: DistributedContext,
        storage_manager: StorageManager,
        session: Transport | None,
        task_id: str,
        allocation_id: str | None,
        *,
        trial_id: int | None = None,
        storage_id: int | None = None,
        clock: Callable[[], str] = _now,
        before_report: Callable[[], None] | None = None,
        after_report: Callable[[], None] | None = None,
    ) -> None:
        self._dist = dist
        self._storage = storage_manager
        self._session = session
        self._task_id = task_id
        self._allocation_id = allocation_id
        self._trial_id = trial_id
        self._storage_db_id = storage_id
        self._clock = clock
        # The trial may be resumed from this checkpoint the moment the master has it (a spot
        # instance reclaimed right after), so the metrics reported before it must be there
        # first: core.init passes the reporting thread's flush here.
        self._before_report = before_report
        # Determined syncs TensorBoard files after each checkpoint report (TensorboardMode.AUTO);
        # core.init passes that sync here.
        self._after_report = after_report

    # -- reporting -----------------------------------------------------------------------------

    def _report(self, storage_id: str, resources: dict[str, int], metadata: dict[str, Any]) -> None:
        if self._session is None:
            logger.info("saved checkpoint %s", storage_id)
            return
        body: dict[str, Any] = {
            "uuid": storage_id,
            "state": "STATE_COMPLETED",
            "resources": {k: str(v) for k, v in resources.items()},
            "metadata": metadata,
            "training": {"trialId": self._trial_id} if self._trial_id is not None else {},
            "allocationId": self._allocation_id,
            "taskId": self._task_id,
            "reportTime": self._clock(),
        }
        if self._storage_db_id is not None:
            body["storageId"] = self._storage_db_id
        if self._before_report is not None:
            self._before_report()
        self._session.request("POST", "/api/v1/checkpoints", body=body)
        logger.info("reported checkpoint %s", storage_id)
        if self._after_report is not None:
            self._after_report()

    def _report_deleted(self, storage_id: str, remaining: dict[str, int]) -> None:
        if self._session is None:
            logger.info("deleted checkpoint %s", storage_id)
            return
        self._session.request(
            "PATCH",
            "/api/v1/checkpoints",
            body={"checkpoints": [{"uuid": storage_id, "resources": {"resources": remaining}}]},
        )

    def _not_chief(self, what: str) -> RuntimeError:
        return RuntimeError(
            f"cannot call CheckpointContext.{what}(shard=False) from non-chief worker "
            f"(rank={self._dist.rank})"
        )

    # -- saving --------------------------------------------------------------------------------

    def upload(
        self,
        ckpt_dir: PathLike | None,
        metadata: dict[str, Any] | None = None,
        *,
        shard: bool = False,
        selector: Selector | None = None,
    ) -> str:
        """Copy ``ckpt_dir``'s contents into storage under a new id, report it, return the id.

        ``shard=True``: every worker calls it (``ckpt_dir=None`` for one with nothing to give);
        the checkpoint is the union of their directories. ``selector(relative path)`` picks
        which files of ``ckpt_dir`` go.
        """
        if not shard:
            if self._dist.rank != 0:
                raise self._not_chief("upload")
            if ckpt_dir is None:
                raise RuntimeError("cannot call .upload(ckpt_dir=None, shard=False): nothing to do")
            meta = check_metadata(metadata)
            src = Path(ckpt_dir)
            storage_id = str(uuid.uuid4())
            _write_metadata(src, meta)
            resources = list_directory(src)
            if selector is not None:
                resources = {k: v for k, v in resources.items() if selector(k)}
                resources[METADATA_FILE] = (src / METADATA_FILE).stat().st_size
            paths = set(resources)  # exactly what will be reported
            try:
                self._storage.upload(src, storage_id, paths)
            except BaseException:
                self._discard(storage_id)
                raise
            self._report(storage_id, resources, meta)
            return storage_id
        if selector is not None and ckpt_dir is None:
            raise RuntimeError("ckpt_dir has to be given when a selector is")
        storage_id = self._dist.broadcast(str(uuid.uuid4()) if self._dist.rank == 0 else None)
        given = self._dist.allgather(ckpt_dir is not None)
        if not any(given):
            raise RuntimeError("upload(shard=True) with ckpt_dir=None on every rank: nothing to do")
        src = Path(ckpt_dir) if ckpt_dir is not None else None
        # Ranks sharing one directory (same inode) without selectors: the lowest one uploads it.
        uid = None
        if src is not None:
            st = os.stat(src)
            uid = (st.st_dev, st.st_ino)
        uids = self._dist.allgather(uid)
        want = src is not None and (selector is not None or uids.index(uid) == self._dist.rank)
        self._sharded_push(src if want else None, storage_id, metadata, selector)
        return storage_id

    def _discard(self, storage_id: str) -> None:
        with contextlib.suppress(Exception):
            self._storage.delete(storage_id)

    def _sharded_push(
        self,
        src: Path | None,
        storage_id: str,
        metadata: dict[str, Any] | None,
        selector: Selector | None,
    ) -> None:
        """Every rank calls this: merge, check conflicts, push own files, chief reports."""
        error: str | None = None
        resources: dict[str, int] = {}
        if src is not None:
            try:
                resources = list_directory(src)
                resources.pop(METADATA_FILE, None)  # the chief writes the merged one
                if selector is not None:
                    resources = {k: v for k, v in resources.items() if selector(k)}
            except Exception as exc:
                error = f"rank {self._dist.rank}: {exc}"
        all_resources = self._dist.allgather(resources)
        merged, shared = merge_resources(all_resources)
        # Same name on several ranks: fine only when every copy has the same content.
        mine = {}
        for name in sorted(shared):
            if self._dist.rank in shared[name] and src is not None:
                try:
                    mine[name] = _digest(src / safe_relpath(name))
                except Exception as exc:
                    error = error or f"rank {self._dist.rank}: {exc}"
        digests = self._dist.allgather(mine)
        conflicts = {
            name: ranks
            for name, ranks in shared.items()
            if len({d[name] for d in digests if name in d}) > 1
        }
        all_meta = self._dist.allgather(dict(metadata or {}))
        merged_meta, meta_conflicts = merge_metadata(all_meta)
        errors = [e for e in self._dist.allgather(error) if e]
        if errors:
            raise RuntimeError("sharded checkpoint not saved: " + "; ".join(errors))
        if conflicts:
            raise CheckpointConflict(conflict_message("file", conflicts))
        if meta_conflicts:
            raise CheckpointConflict(conflict_message("metadata", meta_conflicts))
        check_metadata(merged_meta)  # every rank raises the same ValueError
        paths = None
        if src is not None:
            paths = {n for n in resources if n not in shared or min(shared[n]) == self._dist.rank}
        # The chief writes metadata.json into its own directory (or, having none, a scratch one).
        scratch: Path | None = None
        if self._dist.rank == 0:
            if src is None:
                scratch = self._storage_scratch()
                src = scratch
                paths = set()
            _write_metadata(src, merged_meta)
            assert paths is not None
            paths.add(METADATA_FILE)
            merged[METADATA_FILE] = (src / METADATA_FILE).stat().st_size
        try:
            if src is not None and paths is not None:
                self._storage.upload(src, storage_id, paths)
        except Exception as exc:
            error = f"rank {self._dist.rank}: {exc}"
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
        errors = [e for e in self._dist.allgather(error) if e]
        if errors:
            if self._dist.rank == 0:
                self._discard(storage_id)
            raise RuntimeError("sharded checkpoint not saved: " + "; ".join(errors))
        if self._dist.rank == 0:
            self._report(storage_id, dict(sorted(merged.items())), merged_meta)
        self._dist.allgather(None)  # nobody returns before the checkpoint is reported

    def _storage_scratch(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="harness-ckpt-meta-"))

    @contextlib.contextmanager
    def store_path(
        self, metadata: dict[str, Any] | None = None, *, shard: bool = False
    ) -> Iterator[tuple[Path, str]]:
        """Yield (directory to save into, storage id); on a clean exit, store and report it.

        shared_fs/directory storage hands out the checkpoint's own directory (no copy); cloud
        storage a local staging directory that is uploaded, then removed. An exception inside
        the block discards the checkpoint and reports nothing.
        """
        if not shard:
            if self._dist.rank != 0:
                raise self._not_chief("store_path")
            meta = check_metadata(metadata)
            storage_id = str(uuid.uuid4())
            path = self._storage.pre_store_path(storage_id)
            try:
                yield path, storage_id
                if not path.is_dir():
                    raise FileNotFoundError(
                        f"checkpoint directory {path} vanished before checkpoint {storage_id} "
                        "was stored; nothing was reported"
                    )
                _write_metadata(path, meta)
                resources = list_directory(path)
                self._storage.post_store_path(path, storage_id)
            except BaseException:
                self._storage.discard_store_path(path, storage_id)
                if not self._storage.store_path_is_direct_access():
                    self._discard(storage_id)
                raise
            self._report(storage_id, resources, meta)
            return
        storage_id = self._dist.broadcast(str(uuid.uuid4()) if self._dist.rank == 0 else None)
        path = self._storage.pre_store_path(storage_id)
        failed: str | None = None
        try:
            yield path, storage_id
        except BaseException as exc:
            failed = f"rank {self._dist.rank}: {type(exc).__name__}: {exc}"
            self._sharded_abort(path, storage_id, failed)
            raise
        if self._storage.store_path_is_direct_access():
            # Every rank wrote into the one directory: merge metadata, the chief reports.
            failures = [f for f in self._dist.allgather(failed) if f]
            if failures:
                self._abort_direct(path, storage_id, failures)
            all_meta = self._dist.allgather(dict(metadata or {}))
            merged_meta, conflicts = merge_metadata(all_meta)
            if conflicts:
                raise CheckpointConflict(conflict_message("metadata", conflicts))
            check_metadata(merged_meta)
            if self._dist.rank == 0:
                _write_metadata(path, merged_meta)
                # Every rank has written: the chief makes the whole checkpoint private.
                self._storage.post_store_path(path, storage_id)
                self._report(storage_id, list_directory(path), merged_meta)
            self._dist.allgather(None)
            return
        failures = [f for f in self._dist.allgather(failed) if f]
        if failures:
            self._storage.discard_store_path(path, storage_id)
            raise RuntimeError("sharded checkpoint not saved: " + "; ".join(failures))
        try:
            self._sharded_push(path, storage_id, metadata, None)
        finally:
            self._storage.discard_store_path(path, storage_id)

    def _sharded_abort(self, path: Path, storage_id: str, failed: str) -> None:
        # Tell the other ranks, which are waiting in the first collective after the block.
        with contextlib.suppress(Exception):
            failures = [f for f in self._dist.allgather(failed) if f]
            if self._storage.store_path_is_direct_access():
                if self._dist.rank == 0:
                    self._storage.discard_store_path(path, storage_id)
            else:
                self._storage.discard_store_path(path, storage_id)
            logger.debug("sharded checkpoint %s abandoned: %s", storage_id, failures)

    def _abort_direct(self, path: Path, storage_id: str, failures: list[str]) -> None:
        if self._dist.rank == 0:
            self._storage.discard_store_path(path, storage_id)
        raise RuntimeError("sharded checkpoint not saved: " + "; ".join(failures))

    # -- restoring -----------------------------------------------------------------------------

    def _shared_selector(self, storage_id: str, selector: Selector | None) -> Selector | None:
        """The union of the local workers' selectors, decided once on the local chief."""
        want_filter = any(self._dist.allgather(selector is not None))
        if not want_filter:
            return None
        names: list[str] | None = None
        if self._dist.local_rank == 0:
            names = [n for n in self._storage.list_files(storage_id) if not n.endswith("/")]
        names = self._dist.broadcast_local(names)
        votes = [bool(selector(n)) if selector is not None else True for n in names or []]
        gathered = self._dist.gather_local(votes)
        if self._dist.local_rank != 0:
            return None
        wanted = {n for i, n in enumerate(names or []) if any(v[i] for v in gathered or [])}
        return lambda name: name in wanted

    def download(
        self,
        storage_id: str,
        ckpt_dir: PathLike,
        download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
        *,
        selector: Selector | None = None,
    ) -> None:
        """Copy the checkpoint into ``ckpt_dir`` (created if missing)."""
        download_mode = DownloadMode(download_mode)
        dst = Path(ckpt_dir)
        if download_mode == DownloadMode.NoSharedDownload:
            self._storage.download(storage_id, dst, selector)
            return
        shared = self._shared_selector(storage_id, selector)
        error = None
        if self._dist.local_rank == 0:
            try:
                self._storage.download(storage_id, dst, shared)
            except Exception as exc:
                error = exc
        failed = self._dist.broadcast_local(repr(error) if error else None)
        if error is not None:
            raise error
        if failed:
            raise RuntimeError(f"download of checkpoint {storage_id} failed: {failed}")

    @contextlib.contextmanager
    def restore_path(
        self,
        storage_id: str,
        download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
        *,
        selector: Selector | None = None,
    ) -> Iterator[Path]:
        """Yield the checkpoint's directory (shared storage: in place, nothing is copied)."""
        download_mode = DownloadMode(download_mode)
        if download_mode == DownloadMode.NoSharedDownload:
            with self._storage.restore_path(storage_id, selector) as path:
                yield path
            return
        shared = self._shared_selector(storage_id, selector)
        if self._dist.local_rank == 0:
            try:
                ctx = self._storage.restore_path(storage_id, shared)
                path = ctx.__enter__()
            except Exception as exc:
                self._dist.broadcast_local(("error", repr(exc)))
                raise
            self._dist.broadcast_local(("ok", str(path)))
            try:
                yield path
            finally:
                self._dist.gather_local(None)  # the local workers are done with it
                ctx.__exit__(None, None, None)
        else:
            status, value = self._dist.broadcast_local(None)
            if status != "ok":
                raise RuntimeError(f"restore of checkpoint {storage_id} failed: {value}")
            try:
                yield Path(value)
            finally:
                self._dist.gather_local(None)

    def get_metadata(self, storage_id: str) -> dict[str, Any]:
        """The checkpoint's metadata: from the master on a cluster, else from metadata.json."""
        if self._session is not None:
            answer = self._session.request("GET", f"/api/v1/checkpoints/{storage_id}")
            return dict(((answer or {}).get("checkpoint") or {}).get("metadata") or {})
        with self._storage.restore_path(storage_id, lambda n: n == METADATA_FILE) as path:
            meta = Path(path) / METADATA_FILE
            return json.loads(meta.read_text()) if meta.exists() else {}

    def delete(self, storage_id: str, globs: list[str] | None = None) -> None:
        """Delete the checkpoint (or only the files ``globs`` match) and tell the master."""
        if self._dist.rank != 0:
            raise RuntimeError(f"only the chief may delete checkpoints (rank={self._dist.rank})")
        remaining = self._storage.delete(storage_id, list(globs) if globs is not None else None)
        self._report_deleted(storage_id, remaining)


class DummyCheckpointContext(CheckpointContext):
    """Off-cluster: checkpoints go to the given storage and are reported to nobody."""

    def __init__(self, dist: DistributedContext, storage_manager: StorageManager) -> None:
        super().__init__(dist, storage_manager, None, "", None)


def default_local_storage() -> Path:
    """Determined's off-cluster default: the user's data directory."""
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "determined"


__all__ = [
    "CheckpointConflict",
    "CheckpointContext",
    "DirectoryStorageManager",
    "DownloadMode",
    "DummyCheckpointContext",
    "default_local_storage",
    "merge_metadata",
    "merge_resources",
]
