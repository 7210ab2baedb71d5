"""Where checkpoints live: directory-backed storage (shared_fs and directory).

A shared_fs storage's ``host_path`` is bind-mounted into task containers at its
``container_path`` (default ``/determined_shared_fs``, as in Determined); ``storage_path`` is
a sub-directory of it. A task that runs as a plain process (the agent's process runtime) has no
such mount: it uses ``host_path`` itself. Cloud storages (s3, gcs, azure) come with issue 5.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from pathlib import Path
from typing import Any

DEFAULT_CONTAINER_PATH = "/determined_shared_fs"


class StorageNotSupported(NotImplementedError):
    """A checkpoint storage type this harness cannot write yet."""


def shared_fs_base(cfg: dict[str, Any], mount_exists: bool | None = None) -> Path:
    """The directory checkpoints of a shared_fs storage go into, as this task sees it."""
    host = cfg["host_path"]
    mount = cfg.get("container_path") or DEFAULT_CONTAINER_PATH
    if mount_exists is None:
        mount_exists = os.path.isdir(mount)
    root = mount if mount_exists else host
    sub = cfg.get("storage_path")
    if not sub:
        return Path(root)
    if posixpath.isabs(sub):
        sub = posixpath.relpath(posixpath.normpath(sub), posixpath.normpath(host))
    return Path(root) / sub


class DirectoryStorageManager:
    """Checkpoints as sub-directories (named by storage id) of one base directory."""

    def __init__(self, base: Path) -> None:
        self.base = Path(base)

    def path_of(self, storage_id: str) -> Path:
        if not storage_id or "/" in storage_id or storage_id in (".", ".."):
            raise ValueError(f"invalid checkpoint id {storage_id!r}")
        return self.base / storage_id

    def prepare(self, storage_id: str) -> Path:
        path = self.path_of(storage_id)
        path.mkdir(parents=True, exist_ok=False)
        return path

    def restore_path(self, storage_id: str) -> Path:
        path = self.path_of(storage_id)
        if not path.is_dir():
            raise FileNotFoundError(f"checkpoint {storage_id} not found in {self.base}")
        return path

    def upload(self, src: Path, storage_id: str) -> None:
        shutil.copytree(src, self.path_of(storage_id), dirs_exist_ok=True)

    def download(self, storage_id: str, dst: Path) -> None:
        shutil.copytree(self.restore_path(storage_id), dst, dirs_exist_ok=True)

    def delete(self, storage_id: str) -> None:
        shutil.rmtree(self.path_of(storage_id), ignore_errors=True)


def storage_from_config(cfg: dict[str, Any]) -> DirectoryStorageManager:
    kind = cfg.get("type")
    if kind == "shared_fs":
        return DirectoryStorageManager(shared_fs_base(cfg))
    if kind == "directory":
        return DirectoryStorageManager(Path(cfg["container_path"]))
    raise StorageNotSupported(
        f"checkpoint storage type {kind!r} is not supported by this harness yet (issue 5); "
        "use shared_fs or directory"
    )


def resources_of(path: Path) -> dict[str, int]:
    """Every file under ``path`` with its size, by relative POSIX path."""
    out: dict[str, int] = {}
    for root, _dirs, files in os.walk(path):
        for name in files:
            full = Path(root) / name
            out[full.relative_to(path).as_posix()] = full.stat().st_size
    return dict(sorted(out.items()))
