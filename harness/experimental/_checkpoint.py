"""``Checkpoint``: one checkpoint the master knows, its download, and how checkpoints are ordered
(by a CheckpointSortBy, a validation metric, or the searcher metric with its direction)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

from harness._session import Session
from harness.experimental._common import (
    CheckpointSortBy,
    CheckpointState,
    DownloadMode,
    _descending,
    _enum,
    _ordered,
    _pages,
)


class CheckpointTraining:
    """What the checkpoint's trial knew: ``trial_id``, ``experiment_id``, ``experiment_config``,
    ``hparams``, ``training_metrics``, ``validation_metrics``, ``searcher_metric``."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.trial_id = data.get("trialId")
        self.experiment_id = data.get("experimentId")
        self.experiment_config = data.get("experimentConfig") or {}
        self.hparams = data.get("hparams") or {}
        self.training_metrics = data.get("trainingMetrics") or {}
        self.validation_metrics = data.get("validationMetrics") or {}
        self.searcher_metric = data.get("searcherMetric")


class Checkpoint:
    """A checkpoint the master knows: ``uuid``, ``state``, ``metadata``, ``resources``,
    ``report_time``, ``task_id``, ``allocation_id``, ``training`` (`CheckpointTraining`)."""

    def __init__(self, session: Session, uuid: str) -> None:
        self._session = session
        self.uuid = uuid
        self.task_id: str | None = None
        self.allocation_id: str | None = None
        self.report_time: str | None = None
        self.resources: dict[str, Any] = {}
        self.metadata: dict[str, Any] = {}
        self.state: CheckpointState | None = None
        self.training: CheckpointTraining | None = None
        self.storage_id: int | None = None

    @classmethod
    def _from_json(cls, session: Session, data: dict[str, Any]) -> Checkpoint:
        ckpt = cls(session, data["uuid"])
        ckpt._hydrate(data)
        return ckpt

    def _hydrate(self, data: dict[str, Any]) -> None:
        self.task_id = data.get("taskId")
        self.allocation_id = data.get("allocationId")
        self.report_time = data.get("reportTime")
        self.resources = data.get("resources") or {}
        self.metadata = data.get("metadata") or {}
        self.state = _enum(CheckpointState, data.get("state"))
        self.training = CheckpointTraining(data["training"]) if data.get("training") else None
        self.storage_id = data.get("storageId")

    def reload(self) -> None:
        answer = self._session.request("GET", f"/api/v1/checkpoints/{self.uuid}")
        self._hydrate(answer["checkpoint"])

    def _storage_config(self) -> dict[str, Any]:
        if self.training is None:
            raise NotImplementedError("non-training checkpoints cannot be downloaded")
        storage = self.training.experiment_config.get("checkpoint_storage")
        if not storage:
            raise ValueError(f"checkpoint {self.uuid}: its experiment names no checkpoint storage")
        return dict(storage)

    def download(self, path: str | None = None, mode: DownloadMode = DownloadMode.AUTO) -> str:
        """Copy the checkpoint's files into ``path`` (default ``checkpoints/<uuid>``) and return
        it; a folder that already holds a checkpoint (``metadata.json``) is left as it is."""
        if self.state is None:
            self.reload()
        if self.state not in (CheckpointState.COMPLETED, CheckpointState.PARTIALLY_DELETED):
            state = self.state.value if self.state else None
            raise ValueError(
                "only COMPLETED or PARTIALLY_DELETED checkpoints can be downloaded; checkpoint "
                f"{self.uuid} is {state}"
            )
        mode = DownloadMode(mode)
        if mode is DownloadMode.MASTER:
            raise ValueError(
                "DownloadMode.MASTER: this master does not serve checkpoint files; use AUTO or "
                "DIRECT (the storage itself)"
            )
        target = pathlib.Path(path) if path is not None else pathlib.Path("checkpoints", self.uuid)
        if not (target / "metadata.json").exists():
            from harness.core._storage import storage_from_config

            storage_from_config(self._storage_config()).download(self.uuid, target)
        if not (target / "metadata.json").exists():
            self.write_metadata_file(str(target / "metadata.json"))
        return str(target)

    def write_metadata_file(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.metadata, f, indent=2, sort_keys=True)

    def __repr__(self) -> str:
        return f"Checkpoint(uuid={self.uuid}, task_id={self.task_id})"


def _checkpoint_key(sort_by: Any, experiment_config: dict[str, Any]) -> tuple[Any, bool]:
    """(key function, descending by default) for Determined's ``sort_by``: a CheckpointSortBy,
    a validation metric's name, or None (the searcher metric, best first)."""
    if sort_by is None or sort_by is CheckpointSortBy.SEARCHER_METRIC:
        searcher = experiment_config.get("searcher") or {}
        smaller = searcher.get("smaller_is_better", True)

        def searcher_metric(c: Checkpoint) -> Any:
            return c.training.searcher_metric if c.training else None

        return searcher_metric, not smaller
    if isinstance(sort_by, str):

        def metric(c: Checkpoint) -> Any:
            if c.training is None:
                return None
            avg = c.training.validation_metrics.get("avgMetrics") or {}
            value = avg.get(sort_by)
            return value if isinstance(value, (int, float)) else None

        return metric, False
    sort_by = CheckpointSortBy(sort_by)
    keys = {
        CheckpointSortBy.UUID: lambda c: c.uuid,
        CheckpointSortBy.TRIAL_ID: lambda c: c.training.trial_id if c.training else None,
        CheckpointSortBy.BATCH_NUMBER: lambda c: c.metadata.get("steps_completed"),
        CheckpointSortBy.END_TIME: lambda c: c.report_time,
        CheckpointSortBy.STATE: lambda c: c.state.value if c.state else None,
    }
    return keys[sort_by], False


def _best(
    checkpoints: list[Checkpoint],
    config: dict[str, Any],
    sort_by: str | None,
    smaller_is_better: bool | None,
) -> list[Checkpoint]:
    key, descending = _checkpoint_key(sort_by, config)
    if smaller_is_better is not None:
        descending = not smaller_is_better
    done = [c for c in checkpoints if c.state is CheckpointState.COMPLETED]
    return _ordered(done, key, descending)


def _list_checkpoints(
    session: Session,
    path: str,
    config: dict[str, Any],
    sort_by: Any,
    order_by: Any,
    max_results: int | None,
) -> list[Checkpoint]:
    if (sort_by is None) != (order_by is None):
        raise AssertionError("sort_by and order_by must be either both set, or neither")
    if sort_by is not None and not isinstance(sort_by, (CheckpointSortBy, str)):
        raise ValueError("sort_by must be a CheckpointSortBy or a validation metric's name")
    found = [Checkpoint._from_json(session, c) for c in _pages(session, path, "checkpoints")]
    found = [c for c in found if c.state is CheckpointState.COMPLETED]
    key, best_first_descending = _checkpoint_key(sort_by, config)
    descending = best_first_descending if order_by is None else _descending(order_by)
    out = _ordered(found, key, descending)
    return out[:max_results] if max_results else out


def get_checkpoint_with(session: Session, uuid: str) -> Checkpoint:
    return Checkpoint._from_json(
        session, session.request("GET", f"/api/v1/checkpoints/{uuid}")["checkpoint"]
    )
