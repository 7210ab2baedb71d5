"""``Experiment``: an experiment on the master: its state (and waiting for its end), controls,
labels, trials and checkpoints."""

from __future__ import annotations

import base64
import pathlib
import sys
import time
from collections.abc import Iterator
from typing import Any

from harness._session import Session
from harness.experimental._checkpoint import Checkpoint, _best, _list_checkpoints
from harness.experimental._common import (
    TERMINAL_STATES,
    CheckpointSortBy,
    ExperimentState,
    OrderBy,
    TrialSortBy,
    _descending,
    _enum,
    _ordered,
    _pages,
)
from harness.experimental._trial import Trial


class Experiment:
    """An experiment: ``id``, ``name``, ``state``, ``config``, ``labels``, ``description``, ...
    (after ``reload()``, which objects the client returns have done)."""

    def __init__(self, experiment_id: int, session: Session) -> None:
        self._id = experiment_id
        self._session = session
        self.name: str | None = None
        self.state: ExperimentState | None = None
        self.config: dict[str, Any] | None = None
        self.description: str | None = None
        self.labels: list[str] | None = None
        self.notes: str | None = None
        self.archived: bool | None = None
        self.progress: float | None = None
        self.project_id: int | None = None
        self.workspace_id: int | None = None
        self.username: str | None = None
        self.searcher_type: str | None = None
        self.searcher_metric: str | None = None
        self.resource_pool: str | None = None
        self.start_time: str | None = None
        self.end_time: str | None = None
        self.parent_id: int | None = None
        self.forked_from: int | None = None
        self.checkpoint_count: int | None = None
        self.checkpoint_size: int | None = None

    @property
    def id(self) -> int:
        return self._id

    def _hydrate(self, data: dict[str, Any]) -> None:
        self.name = data.get("name")
        self.state = _enum(ExperimentState, data.get("state"))
        self.config = data.get("config")
        self.description = data.get("description")
        self.labels = list(data.get("labels") or [])
        self.notes = data.get("notes")
        self.archived = data.get("archived")
        self.progress = data.get("progress")
        self.project_id = data.get("projectId")
        self.workspace_id = data.get("workspaceId")
        self.username = data.get("username")
        self.searcher_type = data.get("searcherType")
        self.searcher_metric = data.get("searcherMetric")
        self.resource_pool = data.get("resourcePool")
        self.start_time = data.get("startTime")
        self.end_time = data.get("endTime")
        self.parent_id = data.get("parentId")
        self.forked_from = data.get("forkedFrom")
        self.checkpoint_count = data.get("checkpointCount")
        size = data.get("checkpointSize")
        self.checkpoint_size = int(size) if size is not None else None

    def reload(self) -> None:
        self._hydrate(self._session.request("GET", f"/api/v1/experiments/{self._id}")["experiment"])

    def _verb(self, verb: str) -> None:
        self._session.request("POST", f"/api/v1/experiments/{self._id}/{verb}")

    def activate(self) -> None:
        self._verb("activate")

    def pause(self) -> None:
        self._verb("pause")

    def cancel(self) -> None:
        self._verb("cancel")

    def kill(self) -> None:
        self._verb("kill")

    def archive(self) -> None:
        self._verb("archive")

    def unarchive(self) -> None:
        self._verb("unarchive")

    def delete(self) -> None:
        self._session.request("DELETE", f"/api/v1/experiments/{self._id}")

    def _patch(self, **fields: Any) -> None:
        answer = self._session.request("PATCH", f"/api/v1/experiments/{self._id}", body=fields)
        if answer and answer.get("experiment"):
            self._hydrate(answer["experiment"])

    def set_name(self, name: str) -> None:
        self._patch(name=name)

    def set_description(self, description: str) -> None:
        self._patch(description=description)

    def set_notes(self, notes: str) -> None:
        self._patch(notes=notes)

    def set_labels(self, labels: list[str]) -> None:
        self._patch(labels=list(labels))

    def add_label(self, label: str) -> None:
        self.reload()
        labels = list(self.labels or [])
        if label not in labels:
            self.set_labels([*labels, label])

    def remove_label(self, label: str) -> None:
        self.reload()
        self.set_labels([x for x in self.labels or [] if x != label])

    def wait(self, interval: float = 5.0) -> ExperimentState:
        """Poll until the experiment ends; returns its terminal state. A paused experiment is a
        ValueError (it would never end), as in Determined."""
        started = time.monotonic()
        reported = 0
        while True:
            self.reload()
            if self.state in TERMINAL_STATES:
                assert self.state is not None
                return self.state
            if self.state is ExperimentState.PAUSED:
                raise ValueError(
                    f"Experiment {self._id} is in paused state. Make sure the experiment is active."
                )
            time.sleep(interval)
            minutes = int((time.monotonic() - started) // 60)
            if minutes > reported:
                reported = minutes
                print(
                    f"Waiting for Experiment {self._id} to complete. Elapsed {minutes} minutes",
                    file=sys.stderr,
                )

    def await_first_trial(self, interval: float = 0.1) -> Trial:
        while True:
            trials = self.list_trials()
            if trials:
                return trials[0]
            time.sleep(interval)

    def iter_trials(
        self,
        sort_by: TrialSortBy = TrialSortBy.ID,
        order_by: OrderBy = OrderBy.ASCENDING,
        limit: int | None = None,
    ) -> Iterator[Trial]:
        path = f"/api/v1/experiments/{self._id}/trials"
        trials = [Trial._from_json(self._session, t) for t in _pages(self._session, path, "trials")]
        keys: dict[TrialSortBy, Any] = {
            TrialSortBy.ID: lambda t: t.id,
            TrialSortBy.START_TIME: lambda t: t.start_time,
            TrialSortBy.END_TIME: lambda t: t.end_time,
            TrialSortBy.STATE: lambda t: t.state.value if t.state else None,
            TrialSortBy.RESTARTS: lambda t: t.restarts,
            TrialSortBy.BATCHES_PROCESSED: lambda t: t.total_batches_processed,
            TrialSortBy.BEST_VALIDATION_METRIC: lambda t: t.searcher_metric_value,
        }
        key = keys.get(TrialSortBy(sort_by), keys[TrialSortBy.ID])
        ordered = _ordered(trials, key, _descending(order_by))
        yield from ordered[:limit] if limit else ordered

    def list_trials(
        self, sort_by: TrialSortBy = TrialSortBy.ID, order_by: OrderBy = OrderBy.ASCENDING
    ) -> list[Trial]:
        return list(self.iter_trials(sort_by, order_by))

    def get_trials(
        self, sort_by: TrialSortBy = TrialSortBy.ID, order_by: OrderBy = OrderBy.ASCENDING
    ) -> list[Trial]:
        """Deprecated: ``list_trials``."""
        return self.list_trials(sort_by, order_by)

    def _config(self) -> dict[str, Any]:
        if self.config is None:
            self.reload()
        return self.config or {}

    def list_checkpoints(
        self,
        sort_by: CheckpointSortBy | str | None = None,
        order_by: OrderBy | None = None,
        max_results: int | None = None,
    ) -> list[Checkpoint]:
        """The experiment's completed checkpoints, best (by the searcher metric) first by
        default; ``sort_by`` a CheckpointSortBy or a validation metric, with ``order_by``."""
        path = f"/api/v1/experiments/{self._id}/checkpoints"
        return _list_checkpoints(
            self._session, path, self._config(), sort_by, order_by, max_results
        )

    def top_n_checkpoints(
        self, limit: int, sort_by: str | None = None, smaller_is_better: bool | None = None
    ) -> list[Checkpoint]:
        """The best checkpoint of each trial, the best ``limit`` of those."""
        path = f"/api/v1/experiments/{self._id}/checkpoints"
        found = [
            Checkpoint._from_json(self._session, c)
            for c in _pages(self._session, path, "checkpoints")
        ]
        ordered = _best(found, self._config(), sort_by, smaller_is_better)
        seen: set[Any] = set()
        out = []
        for c in ordered:
            trial = c.training.trial_id if c.training else None
            if trial not in seen:
                seen.add(trial)
                out.append(c)
        if not out:
            raise ValueError(f"experiment {self._id} has no completed checkpoint")
        return out[:limit]

    def top_checkpoint(
        self, sort_by: str | None = None, smaller_is_better: bool | None = None
    ) -> Checkpoint:
        return self.top_n_checkpoints(1, sort_by, smaller_is_better)[0]

    def download_code(self, output_dir: str | None = None) -> str:
        """The experiment's model directory as ``exp-<id>_model_def.tar.gz``; returns its path."""
        answer = self._session.request("GET", f"/api/v1/experiments/{self._id}/model_def")
        name = f"exp-{self._id}_model_def.tar.gz"
        if output_dir:
            folder = pathlib.Path(output_dir).expanduser()
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / name
        else:
            target = pathlib.Path(name)
        target.write_bytes(base64.b64decode((answer or {}).get("b64Tgz") or ""))
        return str(target)

    def __repr__(self) -> str:
        return f"Experiment(id={self._id})"
