"""The part every object-store checkpoint storage shares (s3, gcs).

A checkpoint is the objects ``<prefix>/<storage id>/<relative path>``. ``store_path`` hands out a
local staging directory and pushes it on exit; ``restore_path`` downloads into a temporary
directory and removes it afterwards. Files are streamed one by one between disk and the store
(a subclass's ``_put``/``_get``); nothing reads a whole checkpoint into memory.

An upload that fails part-way (a file vanished, the store answered an error) removes the objects
it had already written, so a half-uploaded checkpoint is never left behind to be reported.
"""

from __future__ import annotations

import abc
import concurrent.futures
import contextlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from harness.core._storage import (
    CheckpointNotFound,
    Selector,
    StorageError,
    StorageManager,
    apply_globs,
    check_storage_id,
    files_to_upload,
    safe_relpath,
)

logger = logging.getLogger("harness.core")

FILES_IN_FLIGHT = 8  # files moved at once (each big one also in parallel parts)


def normalize_prefix(prefix: str | None) -> str:
    """``a/b`` from ``/a/b/``; a prefix with ``..`` is refused."""
    parts = [p for p in (prefix or "").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"checkpoint storage prefix {prefix!r} may not contain '..'")
    return "/".join(parts)


class CloudStorageManager(StorageManager):
    """Checkpoints as objects under ``<prefix>/<storage id>/`` in one bucket."""

    kind = "cloud"
    scheme = "cloud"

    def __init__(self, bucket: str, prefix: str | None = None, temp_dir: str | None = None):
        if not bucket:
            raise ValueError(f"{self.kind} checkpoint storage needs a bucket")
        self.bucket = bucket
        self.prefix = normalize_prefix(prefix)
        self.temp_dir = temp_dir

    # -- what a backend provides ---------------------------------------------------------------

    @abc.abstractmethod
    def _put(self, local: Path, key: str) -> None:
        """Implemented by each cloud's manager."""

    @abc.abstractmethod
    def _get(self, key: str, local: Path) -> None:
        """Implemented by each cloud's manager."""

    @abc.abstractmethod
    def _list(self, prefix: str) -> Iterator[tuple[str, int]]:
        """Implemented by each cloud's manager."""

    @abc.abstractmethod
    def _delete_keys(self, keys: list[str]) -> None:
        """Implemented by each cloud's manager."""

    def _error(self, action: str, exc: BaseException) -> StorageError:
        return StorageError(f"{self.kind} storage {self.describe()}: {action} failed: {exc}")

    # -- shared logic --------------------------------------------------------------------------

    def describe(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.prefix}".rstrip("/")

    def key_prefix(self, storage_id: str) -> str:
        check_storage_id(storage_id)
        return f"{self.prefix}/{storage_id}/" if self.prefix else f"{storage_id}/"

    def store_path_is_direct_access(self) -> bool:
        return False

    def _staging(self, what: str) -> Path:
        if self.temp_dir:
            os.makedirs(self.temp_dir, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"harness-{what}-", dir=self.temp_dir))

    def pre_store_path(self, dst: str) -> Path:
        check_storage_id(dst)
        return self._staging(dst)

    def post_store_path(self, src: Path, dst: str, paths: set[str] | None = None) -> None:
        try:
            self.upload(src, dst, paths)
        finally:
            shutil.rmtree(src, ignore_errors=True)

    def discard_store_path(self, path: Path, dst: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def upload(self, src: Path, dst: str, paths: set[str] | None = None) -> None:
        base = self.key_prefix(dst)
        src = Path(src)
        names = files_to_upload(src, paths)
        written: list[str] = []
        lock = threading.Lock()

        def one(name: str) -> None:
            rel = safe_relpath(name)
            local = src / rel
            if not local.is_file():
                raise FileNotFoundError(
                    f"upload of checkpoint {dst} to {self.describe()}: {local} vanished "
                    "while the checkpoint was being uploaded (the directory changed)"
                )
            try:
                self._put(local, base + rel)
            except FileNotFoundError as exc:
                raise FileNotFoundError(
                    f"upload of checkpoint {dst} to {self.describe()}: {local} vanished "
                    f"while it was being uploaded: {exc}"
                ) from exc
            with lock:
                written.append(base + rel)

        try:
            self._each(one, names)
        except BaseException:
            if written:
                with contextlib.suppress(Exception):
                    self._delete_keys(written)
            raise

    def _each(self, fn: Callable[[str], None], names: list[str]) -> None:
        """``fn(name)`` for every name, ``FILES_IN_FLIGHT`` at a time; the first error wins.

        Each file streams on its own (big ones in parallel parts already); running several at
        once is what keeps a checkpoint of many small files from paying one round trip each.
        """
        if len(names) <= 1:
            for name in names:
                fn(name)
            return
        with concurrent.futures.ThreadPoolExecutor(min(FILES_IN_FLIGHT, len(names))) as pool:
            futures = [pool.submit(fn, name) for name in names]
            try:
                for future in concurrent.futures.as_completed(futures):
                    future.result()
            except BaseException:
                for future in futures:
                    future.cancel()
                raise

    def list_files(self, storage_id: str) -> dict[str, int]:
        base = self.key_prefix(storage_id)
        out: dict[str, int] = {}
        for key, size in self._list(base):
            rel = key[len(base) :]
            if not rel or rel.endswith("/"):
                continue  # a directory marker
            try:
                rel = safe_relpath(rel)
            except ValueError as exc:
                raise StorageError(
                    f"{self.kind} storage {self.describe()}: checkpoint {storage_id} holds an "
                    f"object whose name climbs out of the checkpoint ({key!r}); refusing it"
                ) from exc
            out[rel] = size
            parts = rel.split("/")[:-1]
            for n in range(1, len(parts) + 1):
                out["/".join(parts[:n]) + "/"] = 0
        if not out:
            raise CheckpointNotFound(f"checkpoint {storage_id} not found in {self.describe()}")
        return dict(sorted(out.items()))

    def download(self, src: str, dst: Path, selector: Selector | None = None) -> None:
        base = self.key_prefix(src)
        files = [n for n in self.list_files(src) if not n.endswith("/")]
        dst = Path(dst)
        dst.mkdir(parents=True, exist_ok=True)

        def one(name: str) -> None:
            target = dst / name
            target.parent.mkdir(parents=True, exist_ok=True)
            part = target.with_name(target.name + ".part")
            try:
                self._get(base + name, part)
                os.replace(part, target)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    part.unlink()

        self._each(one, [n for n in files if selector is None or selector(n)])

    @contextlib.contextmanager
    def restore_path(self, src: str, selector: Selector | None = None) -> Iterator[Path]:
        path = self._staging(f"restore-{check_storage_id(src)}")
        try:
            self.download(src, path, selector)
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def delete(self, storage_id: str, globs: list[str] | None = None) -> dict[str, int]:
        base = self.key_prefix(storage_id)
        try:
            resources = self.list_files(storage_id)
        except CheckpointNotFound:
            return {}
        to_delete, remaining = apply_globs(resources, globs if globs is not None else ["**/*"])
        if to_delete:
            self._delete_keys([base + name for name in to_delete])
        return remaining
