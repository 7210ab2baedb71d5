"""The storage edge of checkpoint GC: removes one checkpoint's files from where it was stored.

The harness's storage managers (the code that wrote the checkpoint) name the files; the master
deletes them itself instead of starting a GC task container as Determined does. For shared_fs
that is `host_path` (+ `storage_path`) on the master's machine, for `directory` its
`container_path` as the master sees it: both need the master to see the same folders as the
agents (one machine, or an NFS mount), as docs/checkpoint-gc.md says.

A shared_fs or directory checkpoint is its writer's alone (0700 folders, 0600 files: the
harness makes it so). Tasks run as their owners' Unix users only where the agents are root, and
the master deletes another uid's checkpoint only as root: `det deploy local` run as root starts
the master as root too; run as anyone else, its agents are single-user and every checkpoint is
the master's own user's. A master that may not delete says so in the recorded error.

A deletion is done only when nothing is left: the directory is gone, or the bucket lists no
object under the checkpoint's prefix. Anything else raises CheckpointDeleteError, so the caller
records the failure and tries again later instead of reporting a deletion that did not happen.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any, Protocol

from harness.core._storage import (
    CheckpointNotFound,
    DirectoryStorageManager,
    StorageError,
    StorageManager,
    shared_fs_base,
    storage_from_config,
)


class CheckpointDeleteError(RuntimeError):
    """The checkpoint's files are (maybe) still there; the message says what failed."""


class CheckpointDeleter(Protocol):
    def __call__(self, storage: dict[str, Any] | str, uuid: str) -> None: ...


class CheckpointFileRemover(Protocol):
    def __call__(
        self, storage: dict[str, Any] | str, uuid: str, globs: list[str]
    ) -> dict[str, int]: ...


def _manager(storage: dict[str, Any] | str) -> StorageManager:
    if isinstance(storage, dict) and storage.get("type") == "shared_fs":
        # The master is not in a task container: the host side of the bind mount.
        return DirectoryStorageManager(shared_fs_base(storage, mount_exists=False))
    return storage_from_config(storage)


def _delete_directory(manager: DirectoryStorageManager, uuid: str) -> None:
    path = manager.path_of(uuid)
    failures: list[str] = []

    def note(_fn: object, name: str, exc: Any) -> None:
        # onerror (3.11) passes exc_info, onexc (3.12+) the exception.
        error = exc[1] if isinstance(exc, tuple) else exc
        # Another pass deleting the same checkpoint at once removed it first: gone, as asked.
        if not isinstance(error, FileNotFoundError):
            failures.append(f"{name}: {error}")

    if path.exists():
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=note)
        else:
            shutil.rmtree(path, onerror=note)
    if path.exists() or failures:
        detail = "; ".join(failures[:3]) or "the folder is still there"
        hint = not_ours_hint(path)
        raise CheckpointDeleteError(f"checkpoint {uuid} in {path}: {detail}{hint}")


def not_ours_hint(path: Path, euid: int | None = None) -> str:
    """Why a checkpoint this process may not delete is not deletable by it: another Unix user's
    (its task's user) private folder, and this master is not root. Empty when that is not why."""
    euid = os.geteuid() if euid is None else euid
    try:
        owner = path.stat().st_uid
    except OSError:
        return ""
    if euid == 0 or owner == euid:
        return ""
    return (
        f" (it belongs to uid {owner}, the Unix user its task ran as, and only that user may "
        f"change it; this master runs as uid {euid}: where tasks run as their owners' users, "
        "run the master as root)"
    )


def delete_checkpoint_files(storage: dict[str, Any] | str, uuid: str) -> None:
    """Remove every file of checkpoint `uuid`; a checkpoint already gone counts as removed.
    Blocking (file system or HTTP): run it in a thread."""
    try:
        manager = _manager(storage)
        if isinstance(manager, DirectoryStorageManager):
            _delete_directory(manager, uuid)
            return
        remaining = manager.delete(uuid)
        if remaining:
            raise CheckpointDeleteError(
                f"checkpoint {uuid} in {manager.describe()}: {len(remaining)} file(s) remain"
            )
        try:
            left = manager.list_files(uuid)
        except CheckpointNotFound:
            return
        raise CheckpointDeleteError(
            f"checkpoint {uuid} in {manager.describe()}: {len(left)} file(s) remain after delete"
        )
    except CheckpointDeleteError:
        raise
    except (StorageError, OSError, ValueError, KeyError, ImportError) as exc:
        raise CheckpointDeleteError(f"checkpoint {uuid}: {type(exc).__name__}: {exc}") from exc


def remove_checkpoint_files(
    storage: dict[str, Any] | str, uuid: str, globs: list[str]
) -> dict[str, int]:
    """`det checkpoint rm`: delete the files matching `globs` (none: only re-read), and answer
    what the storage holds afterwards, as resources (path: size; directories end in '/')."""
    try:
        manager = _manager(storage)
        if globs:
            manager.delete(uuid, globs)
        try:
            return manager.list_files(uuid)
        except CheckpointNotFound:
            return {}
    except (StorageError, OSError, ValueError, KeyError, ImportError) as exc:
        raise CheckpointDeleteError(f"checkpoint {uuid}: {type(exc).__name__}: {exc}") from exc


def delete_tensorboard_files(
    storage: dict[str, Any] | str, cluster_id: str, experiment_id: int
) -> None:
    """Remove the TensorBoard files an experiment's trials synced to checkpoint storage, under
    ``<cluster id>/tensorboard/experiment/<id>/`` (harness/core/_tensorboard.py), as Determined's
    DeleteTensorboardFiles; nothing there counts as removed. Blocking: run it in a thread."""
    folder = f"tensorboard/experiment/{int(experiment_id)}"
    try:
        left = _manager(storage).delete(cluster_id, globs=[folder])
    except (StorageError, OSError, ValueError, KeyError, ImportError) as exc:
        raise CheckpointDeleteError(f"{cluster_id}/{folder}: {type(exc).__name__}: {exc}") from exc
    remaining = [name for name in left if name.startswith(folder + "/")]
    if remaining:
        raise CheckpointDeleteError(f"{cluster_id}/{folder}: {len(remaining)} file(s) remain")
