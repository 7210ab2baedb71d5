"""Where checkpoints live: storage managers for shared_fs, directory, s3 and gcs.

Every manager keeps a checkpoint under its storage id and offers Determined's operations:
``pre_store_path``/``post_store_path`` (a directory to save into, then push it to storage),
``restore_path`` (a directory to read from), ``upload``/``download`` (copy a local directory
in or out, optionally only some files), ``list_files`` and ``delete`` (by globs, answering what
is left).

A shared_fs storage's ``host_path`` is bind-mounted into task containers at its
``container_path`` (default ``/determined_shared_fs``, as in Determined); ``storage_path`` is
a sub-directory of it. A task that runs as a plain process (the agent's process runtime) has no
such mount: it uses ``host_path`` itself. Directory storages write in place ("direct access");
cloud storages (``_storage_cloud``) stage files in a local temporary directory. s3 and gcs
import their client libraries only when such a storage is built.

Folders a task makes above its checkpoints in a shared storage (``storage_path``) are 1777, as
/tmp: the tasks of every user, each their own Unix user, add checkpoints there, and the sticky
bit keeps each one's from the others. Each checkpoint itself is its writer's alone: its folder
and every folder in it 0700, its files 0600 (0700 for one its writer made executable), however
they were written (in place under the task's umask, or copied in), so another user's task can
neither list nor read it. The master deletes them (docs/checkpoint-gc.md).

Paths inside a checkpoint are relative POSIX paths; directories are listed with a trailing
``/`` and size 0, as Determined lists them. Nothing here ever writes outside the directory it
was given: a stored name or a glob that climbs out (``..``, absolute) is refused.
"""

from __future__ import annotations

import abc
import contextlib
import os
import posixpath
import re
import shutil
import stat
import typing
import urllib.parse
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

DEFAULT_CONTAINER_PATH = "/determined_shared_fs"
CONTAINER_RUN_DIR = "/run/determined"  # DET_RUN_DIR in a container task (docker runtime)

Selector = typing.Callable[[str], bool]  # typing: subscriptable on 3.8


class StorageNotSupported(NotImplementedError):
    """A checkpoint storage type this harness cannot write."""


class StorageError(RuntimeError):
    """A checkpoint storage backend failed; the message names the backend and where."""


class CheckpointNotFound(FileNotFoundError):
    """No checkpoint with this storage id exists in the storage."""


# ---------------------------------------------------------------------------------------------
# Pure helpers: names, listings, globs.


def check_storage_id(storage_id: str) -> str:
    """A storage id is one path component: never empty, never ``.``/``..``, no separators."""
    if (
        not isinstance(storage_id, str)
        or not storage_id
        or storage_id in (".", "..")
        or "/" in storage_id
        or "\\" in storage_id
        or "\x00" in storage_id
    ):
        raise ValueError(f"invalid checkpoint id {storage_id!r}")
    return storage_id


def safe_relpath(name: str) -> str:
    """``name`` as a normalized relative POSIX path inside a checkpoint, or ValueError."""
    if not name or "\x00" in name or "\\" in name:
        raise ValueError(f"invalid path in checkpoint: {name!r}")
    if posixpath.isabs(name):
        raise ValueError(f"absolute path in checkpoint refused: {name!r}")
    trailing = name.endswith("/")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"path escapes the checkpoint directory: {name!r}")
    return "/".join(parts) + ("/" if trailing else "")


def list_directory(root: Path) -> dict[str, int]:
    """Every file (with its size) and sub-directory (``name/``, 0) under ``root``, sorted."""
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"checkpoint directory {root} does not exist")
    if not root.is_dir():
        raise NotADirectoryError(f"checkpoint directory {root} is not a directory")
    out: dict[str, int] = {}
    for cur, dirs, files in os.walk(root):
        rel = Path(cur).relative_to(root)
        for d in dirs:
            out[(rel / d).as_posix() + "/"] = 0
        for f in files:
            full = Path(cur) / f
            try:
                out[(rel / f).as_posix()] = full.stat().st_size
            except FileNotFoundError:  # removed while listing: it is not part of the checkpoint
                continue
    return dict(sorted(out.items()))


def resources_of(path: Path) -> dict[str, int]:
    """Every file under ``path`` with its size, by relative POSIX path (no directories)."""
    return {k: v for k, v in list_directory(path).items() if not k.endswith("/")}


def files_to_upload(src: Path, paths: set[str] | None) -> list[str]:
    """The files to push: every file under ``src``, or exactly those ``paths`` name.

    Named paths are not re-checked against a fresh listing: one that has gone since the caller
    listed it must fail the upload (it was going to be reported), not be skipped.
    """
    if paths is None:
        return [k for k in list_directory(src) if not k.endswith("/")]
    if not Path(src).is_dir():
        raise FileNotFoundError(f"checkpoint directory {src} does not exist")
    return sorted(safe_relpath(k) for k in paths if not k.endswith("/"))


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob over relative POSIX paths: ``*`` and ``?`` stay in one component, ``**`` spans."""
    if not pattern or posixpath.isabs(pattern) or "\x00" in pattern:
        raise ValueError(f"invalid glob {pattern!r}: it must be a relative path pattern")
    parts = pattern.split("/")
    if ".." in parts:
        raise ValueError(f"glob {pattern!r} refused: it climbs out of the checkpoint")
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def apply_globs(resources: dict[str, int], globs: list[str]) -> tuple[list[str], dict[str, int]]:
    """(files to delete, what remains) when ``globs`` are deleted from ``resources``.

    A glob that matches a directory deletes everything under it, as a shell ``rm -r`` would.
    """
    regexes = [glob_regex(g) for g in globs]

    def gone(name: str) -> bool:
        bare = name.rstrip("/")
        parts = bare.split("/")
        for n in range(1, len(parts) + 1):
            prefix = "/".join(parts[:n])
            if n < len(parts) or name.endswith("/"):
                if any(r.match(prefix) for r in regexes):
                    return True
            elif any(r.match(bare) for r in regexes):
                return True
        return False

    delete = sorted(k for k in resources if not k.endswith("/") and gone(k))
    remaining = {k: v for k, v in resources.items() if not gone(k)}
    # A directory is left only if something inside it is left (or it was listed on its own).
    return delete, remaining


# ---------------------------------------------------------------------------------------------
# The managers.


class StorageManager(abc.ABC):
    """Determined's storage manager operations; subclasses fill in the transport."""

    kind = "storage"

    @abc.abstractmethod
    def describe(self) -> str:
        """Where checkpoints go, for messages (``s3://bucket/prefix``, a directory)."""
        ...

    @abc.abstractmethod
    def store_path_is_direct_access(self) -> bool:
        """True when ``pre_store_path`` hands out the checkpoint's final location."""
        ...

    @abc.abstractmethod
    def pre_store_path(self, dst: str) -> Path: ...

    @abc.abstractmethod
    def post_store_path(self, src: Path, dst: str, paths: set[str] | None = None) -> None: ...

    @abc.abstractmethod
    def discard_store_path(self, path: Path, dst: str) -> None:
        """A save failed: drop what ``pre_store_path`` handed out (nothing was pushed)."""
        ...

    @contextlib.contextmanager
    def store_path(self, dst: str) -> Iterator[Path]:
        path = self.pre_store_path(dst)
        try:
            yield path
        except BaseException:
            self.discard_store_path(path, dst)
            raise
        self.post_store_path(path, dst)

    @abc.abstractmethod
    def restore_path(self, src: str, selector: Selector | None = None) -> Any: ...

    @abc.abstractmethod
    def upload(self, src: Path, dst: str, paths: set[str] | None = None) -> None: ...

    @abc.abstractmethod
    def download(self, src: str, dst: Path, selector: Selector | None = None) -> None: ...

    @abc.abstractmethod
    def list_files(self, storage_id: str) -> dict[str, int]:
        """The checkpoint's files and sizes; CheckpointNotFound when it has none."""
        ...

    @abc.abstractmethod
    def delete(self, storage_id: str, globs: list[str] | None = None) -> dict[str, int]:
        """Delete the files ``globs`` match (default: all); answer the resources left."""
        ...


PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_mode(mode: int, is_dir: bool) -> int:
    """A stored checkpoint's permission bits: its owner's alone (0700 folders, 0600 files; a
    file its owner may execute keeps that)."""
    if is_dir:
        return PRIVATE_DIR
    return PRIVATE_FILE | (mode & 0o100)


def _chmod_owned(path: Path, mode: int) -> None:
    """chmod what this process's user owns; another's (a root-written file in a checkpoint, a
    folder another rank's user made) is left as it is rather than failing the checkpoint."""
    with contextlib.suppress(PermissionError):
        os.chmod(path, mode)


def make_private_dir(path: Path) -> None:
    """Create ``path`` (one level; it may exist, as every rank of a sharded save prepares the
    same one) as its writer's alone, whatever the umask."""
    path.mkdir(mode=PRIVATE_DIR, exist_ok=True)
    _chmod_owned(path, PRIVATE_DIR)


def make_private(root: Path) -> None:
    """Make a stored checkpoint its writer's alone: every folder in it 0700, every file 0600.
    Symbolic links are not followed (chmod would change what they point at)."""
    root = Path(root)
    if root.is_symlink() or not root.is_dir():
        return
    _chmod_owned(root, PRIVATE_DIR)
    for cur, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(cur) / name
            try:
                st = os.lstat(path)
            except FileNotFoundError:  # removed meanwhile: nothing to protect
                continue
            if stat.S_ISLNK(st.st_mode):
                continue
            wanted = private_mode(st.st_mode, stat.S_ISDIR(st.st_mode))
            if stat.S_IMODE(st.st_mode) != wanted:
                _chmod_owned(path, wanted)


def _copy_into(
    src_root: Path, names: Iterable[str], dst_root: Path, what: str, *, private: bool = False
) -> None:
    """Copy ``names`` from ``src_root`` into ``dst_root``; ``private``: into a stored
    checkpoint, each folder made 0700 and each file 0600 as it is created."""
    for name in names:
        rel = safe_relpath(name)
        source = src_root / rel
        target = dst_root / rel
        if private:
            folder = dst_root
            for part in Path(rel).parent.parts:
                folder = folder / part
                make_private_dir(folder)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(source, target)
            if private:
                _chmod_owned(target, private_mode(os.stat(source).st_mode, False))
        except FileNotFoundError as exc:
            if not source.exists():
                raise FileNotFoundError(
                    f"{what}: {source} vanished while it was being copied (the checkpoint "
                    "directory changed during the upload)"
                ) from exc
            raise


def make_shared_dirs(path: Path) -> None:
    """Create ``path`` and what is missing above it as folders every task user may add to:
    mode 1777, world-writable with the sticky bit as /tmp, so no one removes or renames what
    another put there. Tasks run as their owners' Unix users (docs/operations.md), and the first
    one to write into a shared storage must not make it its owner's alone. Existing folders are
    left as they are."""
    missing = []
    folder = Path(path)
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir()
        except FileExistsError:  # another task made it meanwhile
            continue
        folder.chmod(0o1777)


class DirectoryStorageManager(StorageManager):
    """Checkpoints as sub-directories (named by storage id) of one base directory."""

    kind = "shared_fs"

    def __init__(self, base: Path) -> None:
        self.base = Path(base)

    def describe(self) -> str:
        return str(self.base)

    def store_path_is_direct_access(self) -> bool:
        return True

    def path_of(self, storage_id: str) -> Path:
        return self.base / check_storage_id(storage_id)

    def prepare(self, storage_id: str) -> Path:
        path = self.path_of(storage_id)
        make_shared_dirs(self.base)
        path.mkdir(mode=PRIVATE_DIR, exist_ok=False)
        _chmod_owned(path, PRIVATE_DIR)
        return path

    def pre_store_path(self, dst: str) -> Path:
        path = self.path_of(dst)
        make_shared_dirs(self.base)
        # Its writer's alone from the start: what the task writes in it under its own umask
        # (0644 files) cannot be reached by others before post_store_path tightens it.
        make_private_dir(path)  # sharded: every rank prepares the same one
        return path

    def post_store_path(self, src: Path, dst: str, paths: set[str] | None = None) -> None:
        make_private(self.path_of(dst))  # written in place: only its modes change

    def discard_store_path(self, path: Path, dst: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def existing(self, storage_id: str) -> Path:
        path = self.path_of(storage_id)
        if not path.is_dir():
            raise CheckpointNotFound(f"checkpoint {storage_id} not found in {self.base}")
        return path

    @contextlib.contextmanager
    def restore_path(self, src: str, selector: Selector | None = None) -> Iterator[Path]:
        yield self.existing(src)  # in place: nothing is copied, a selector changes nothing

    def upload(self, src: Path, dst: str, paths: set[str] | None = None) -> None:
        names = files_to_upload(Path(src), paths)
        target = self.path_of(dst)
        make_shared_dirs(self.base)
        make_private_dir(target)
        _copy_into(Path(src), names, target, f"upload to {target}", private=True)

    def download(self, src: str, dst: Path, selector: Selector | None = None) -> None:
        root = self.existing(src)
        names = [n for n in resources_of(root) if selector is None or selector(n)]
        Path(dst).mkdir(parents=True, exist_ok=True)
        _copy_into(root, names, Path(dst), f"download of {src}")

    def list_files(self, storage_id: str) -> dict[str, int]:
        return list_directory(self.existing(storage_id))

    def delete(self, storage_id: str, globs: list[str] | None = None) -> dict[str, int]:
        path = self.path_of(storage_id)
        if not path.is_dir():
            return {}
        if globs is None or "**/*" in globs:
            shutil.rmtree(path, ignore_errors=True)
            return {}
        to_delete, remaining = apply_globs(list_directory(path), globs)
        for name in to_delete:
            # missing_ok: another deletion of the same files may have removed it first.
            (path / safe_relpath(name)).unlink(missing_ok=True)
        for name in sorted(list_directory(path), reverse=True):  # deepest first
            if name.endswith("/") and name not in remaining:
                with contextlib.suppress(OSError):
                    (path / name).rmdir()
        return list_directory(path)


def shared_fs_base(cfg: dict[str, Any], mount_exists: bool | None = None) -> Path:
    """The directory checkpoints of a shared_fs storage go into, as this task sees it.

    Only a container task has the mount; the runtime says which by where it puts the run dir.
    A process task uses ``host_path`` even when the host happens to have a folder at the
    container path (another program may have made one: the task would write where no other
    task of the trial looks).
    """
    host = cfg["host_path"]
    mount = cfg.get("container_path") or DEFAULT_CONTAINER_PATH
    if mount_exists is None:
        in_container = os.environ.get("DET_RUN_DIR") == CONTAINER_RUN_DIR
        mount_exists = in_container and os.path.isdir(mount)
    root = mount if mount_exists else host
    sub = cfg.get("storage_path")
    if not sub:
        return Path(root)
    if posixpath.isabs(sub):
        sub = posixpath.relpath(posixpath.normpath(sub), posixpath.normpath(host))
    return Path(root) / sub


def storage_from_string(shortcut: str) -> StorageManager:
    """Determined's ``checkpoint_storage`` shortcut: a path, ``file://``, ``s3://``, ``gs://``."""
    p = urllib.parse.urlparse(shortcut)
    if p.params or p.query or p.fragment:
        raise ValueError(f"malformed checkpoint_storage string {shortcut!r}")
    scheme = p.scheme.lower()
    if scheme in ("", "file"):
        if p.netloc:
            raise ValueError(f"a file URI for checkpoint_storage has no host: {shortcut!r}")
        return DirectoryStorageManager(Path(p.path))
    if scheme == "s3":
        return storage_from_config({"type": "s3", "bucket": p.netloc, "prefix": p.path[1:]})
    if scheme == "gs":
        return storage_from_config({"type": "gcs", "bucket": p.netloc, "prefix": p.path[1:]})
    raise ValueError(f"checkpoint_storage scheme {p.scheme!r} not understood: use s3, gs or file")


def storage_from_config(cfg: Any) -> StorageManager:
    """The storage manager for an experiment's ``checkpoint_storage`` (a dict or a shortcut)."""
    if isinstance(cfg, str):
        return storage_from_string(cfg)
    kind = cfg.get("type")
    if kind == "shared_fs":
        return DirectoryStorageManager(shared_fs_base(cfg))
    if kind == "directory":
        manager = DirectoryStorageManager(Path(cfg["container_path"]))
        manager.kind = "directory"
        return manager
    if kind == "s3":
        from harness.core._storage_s3 import S3StorageManager

        return S3StorageManager.from_config(cfg)
    if kind == "gcs":
        from harness.core._storage_gcs import GCSStorageManager

        return GCSStorageManager.from_config(cfg)
    raise StorageNotSupported(
        f"checkpoint storage type {kind!r} is not supported by this harness; "
        "use shared_fs, directory, s3 or gcs"
    )
