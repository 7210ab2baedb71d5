"""TensorBoard files of a trial: where they are written and how they reach checkpoint storage.

As in Determined: files are written under a local directory (``get_tensorboard_path()``,
``<base_path or /tmp>/tensorboard-<allocation id>-<rank>``) and copied to the checkpoint
storage under ``<cluster id>/tensorboard/experiment/<exp id>/trial/<trial id>/``. In
``TensorboardMode.AUTO`` the harness writes training and validation metrics as event files
(``Determined/<name>``, validation names prefixed ``val_``) and syncs at each report (at most
once a second) and on close. In ``MANUAL`` the user writes files and calls
``upload_tensorboard_files()``.

The event writer needs the ``tensorboard`` package (imported only when used); without it the
metric writer is a no-op with one log line. Files are synced to shared_fs and directory storages
(copies) and to s3 and gcs (one object per file, through the checkpoint storage's client).
"""

from __future__ import annotations

import enum
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

logger = logging.getLogger("harness.core")


class TensorboardMode(enum.Enum):
    """AUTO: the harness writes metrics and syncs; MANUAL: the user writes and uploads."""

    AUTO = "AUTO"
    MANUAL = "MANUAL"


def base_path(checkpoint_config: dict[str, Any], allocation_id: str, rank: int = 0) -> Path:
    """The local directory TensorBoard files are written to (Determined's get_base_path)."""
    root = checkpoint_config.get("base_path") or "/tmp"
    return Path(root) / f"tensorboard-{allocation_id}-{rank}"


def sync_path(cluster_id: str, experiment_id: int, trial_id: int) -> PurePosixPath:
    """Where a trial's files go inside the checkpoint storage."""
    return PurePosixPath(
        cluster_id or "cluster", "tensorboard", "experiment", str(experiment_id), "trial",
        str(trial_id),
    )  # fmt: skip


def storage_root(checkpoint_config: dict[str, Any]) -> Path | None:
    """The directory a storage config writes to, or None for cloud storages."""
    kind = checkpoint_config.get("type")
    if kind == "shared_fs":
        from harness.core._storage import shared_fs_base

        return shared_fs_base(checkpoint_config)
    if kind == "directory":
        return Path(checkpoint_config["container_path"])
    return None


def _all(_: Path) -> bool:
    return True


def _same(path: Path, _rank: int) -> Path:
    return path


def storage_writer(
    checkpoint_config: dict[str, Any], sync: PurePosixPath
) -> Path | Callable[[Path, str], None] | None:
    """Where a trial's TensorBoard files go: a directory (shared_fs, directory), a function that
    puts one file as an object (s3, gcs: ``<prefix>/<sync path>/<file>``), or None."""
    root = storage_root(checkpoint_config)
    if root is not None:
        return root / sync
    if checkpoint_config.get("type") not in ("s3", "gcs"):
        return None
    from harness.core._storage import storage_from_config

    cloud: Any = storage_from_config(checkpoint_config)
    base = "/".join(p for p in (cloud.prefix, str(sync)) if p)

    def put(local: Path, rel: str) -> None:
        cloud._put(local, f"{base}/{rel}")

    return put


class TensorboardManager:
    """Copies new or changed files under ``base`` to ``dest``: a directory, or a function
    ``put(local file, relative POSIX name)``; None: nowhere, logged once."""

    MIN_INTERVAL_S = 1.0

    def __init__(
        self,
        base: Path,
        dest: Path | Callable[[Path, str], None] | None,
        *,
        clock: Callable[[], float] = time.time,
        shared: Path | None = None,
    ) -> None:
        self.base_path = Path(base)
        self.dest = dest
        # The folders above ``dest`` that tasks of every user write into (made 1777 first).
        self.shared = shared
        self._clock = clock
        self._last_sync: float | None = None
        self._synced: dict[Path, tuple[int, int]] = {}
        self._warned = False

    def sync(
        self,
        selector: Callable[[Path], bool] = _all,
        mangler: Callable[[Path, int], Path] = _same,
        rank: int = 0,
        *,
        force: bool = False,
    ) -> list[str]:
        """Copy what changed since the last sync; returns the relative names written."""
        now = self._clock()
        recent = self._last_sync is not None and now - self._last_sync < self.MIN_INTERVAL_S
        if recent and not force:
            return []
        self._last_sync = now
        if self.dest is None:
            if not self._warned:
                logger.warning("TensorBoard files are not synced: unsupported checkpoint storage")
                self._warned = True
            return []
        written = []
        for path in sorted(self.base_path.rglob("*")) if self.base_path.exists() else []:
            if not path.is_file() or not selector(path):
                continue
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
            if self._synced.get(path) == stamp:
                continue
            rel = mangler(path.relative_to(self.base_path), rank).as_posix()
            if callable(self.dest):
                self.dest(path, rel)
            else:
                if self.shared is not None:
                    from harness.core._storage import make_shared_dirs

                    make_shared_dirs(self.shared)
                    self.shared = None
                target = self.dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
            self._synced[path] = stamp
            written.append(rel)
        return written


def _numeric(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if hasattr(value, "item") and callable(value.item):
        try:
            item = value.item()
        except (ValueError, RuntimeError, TypeError):
            return None
        return _numeric(item) if not hasattr(item, "item") else None
    return None


class MetricWriter:
    """Writes scalar metrics as TensorBoard event files; a no-op without ``tensorboard``."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = Path(logdir)
        self._writer: Any = None
        self._protos: Any = None
        self._missing = False

    def _open(self) -> bool:
        """The event file opens at the first write (importing tensorboard costs ~1 s)."""
        if self._writer is not None:
            return True
        if self._missing:
            return False
        try:
            from tensorboard.compat.proto import event_pb2, summary_pb2
            from tensorboard.summary.writer.event_file_writer import EventFileWriter
        except ImportError:
            logger.info("the tensorboard package is not installed: no TensorBoard event files")
            self._missing = True
            return False
        self.logdir.mkdir(parents=True, exist_ok=True)
        self._writer = EventFileWriter(str(self.logdir))
        self._protos = (event_pb2, summary_pb2)
        return True

    def _add(self, items: list[tuple[str, float, int]]) -> None:
        if not items or not self._open():
            return
        event_pb2, summary_pb2 = self._protos
        now = time.time()
        for tag, value, step in items:
            value_pb = summary_pb2.Summary.Value(tag=tag, simple_value=value)
            summary = summary_pb2.Summary(value=[value_pb])
            self._writer.add_event(event_pb2.Event(wall_time=now, step=step, summary=summary))
        self._writer.flush()

    @staticmethod
    def training_items(
        steps_completed: int,
        metrics: dict[str, Any],
        batch_metrics: list[dict[str, Any]] | None = None,
    ) -> list[tuple[str, float, int]]:
        """Scalars of a training report: each batch at its own step, then the averages of
        names no batch had (Determined's BatchMetricWriter)."""
        items: list[tuple[str, float, int]] = []
        seen = set()
        batches = batch_metrics or []
        for i, batch in enumerate(batches):
            step = steps_completed - len(batches) + i
            for name, value in batch.items():
                seen.add(name)
                v = _numeric(value)
                if v is not None:
                    items.append(("Determined/" + name, v, step))
        for name, value in metrics.items():
            v = _numeric(value)
            if name not in seen and v is not None:
                items.append(("Determined/" + name, v, steps_completed))
        return items

    @staticmethod
    def validation_items(
        steps_completed: int, metrics: dict[str, Any]
    ) -> list[tuple[str, float, int]]:
        items = []
        for name, value in metrics.items():
            v = _numeric(value)
            if v is not None:
                tag = name if name.startswith("val") else "val_" + name
                items.append(("Determined/" + tag, v, steps_completed))
        return items

    def add(self, items: list[tuple[str, float, int]]) -> None:
        self._add(items)

    def on_train_step_end(
        self,
        steps_completed: int,
        metrics: dict[str, Any],
        batch_metrics: list[dict[str, Any]] | None = None,
    ) -> None:
        self._add(self.training_items(steps_completed, metrics, batch_metrics))

    def on_validation_step_end(self, steps_completed: int, metrics: dict[str, Any]) -> None:
        self._add(self.validation_items(steps_completed, metrics))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def default_local_base() -> Path:
    """Off-cluster TensorBoard directory (used by ``get_tensorboard_path`` in local mode)."""
    return Path(os.environ.get("TMPDIR") or "/tmp") / f"tensorboard-local-{os.getpid()}"
