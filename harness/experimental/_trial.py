"""``Trial``: a trial of an experiment, its checkpoints, logs and metrics reports."""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from harness._session import APIError, Session
from harness.experimental._checkpoint import (
    Checkpoint,
    _best,
    _list_checkpoints,
    get_checkpoint_with,
)
from harness.experimental._common import (
    LOG_LEVELS,
    CheckpointSortBy,
    CheckpointState,
    OrderBy,
    TrialState,
    _enum,
    _ndjson,
    _ordered,
    _pages,
)

if TYPE_CHECKING:
    from harness.experimental._experiment import Experiment


class TrialMetrics:
    """One metrics report of a trial."""

    batch_metrics = None

    def __init__(
        self,
        trial_id: int,
        trial_run_id: int,
        steps_completed: int,
        end_time: Any,
        metrics: dict[str, Any],
        group: str,
        batch_metrics: list[dict[str, Any]] | None = None,
    ) -> None:
        self.trial_id = trial_id
        self.trial_run_id = trial_run_id
        self.steps_completed = steps_completed
        self.end_time = end_time
        self.metrics = metrics
        self.group = group
        self.batch_metrics = batch_metrics

    @property
    def total_batches(self) -> int:
        return self.steps_completed

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(trial_id={self.trial_id}, group={self.group!r}, "
            f"steps_completed={self.steps_completed}, metrics={self.metrics!r})"
        )


class TrainingMetrics(TrialMetrics):
    """Deprecated: a TrialMetrics of the "training" group."""

    def __init__(self, total_batches: int | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("steps_completed", total_batches)
        kwargs["group"] = "training"
        super().__init__(**kwargs)


class ValidationMetrics(TrialMetrics):
    """Deprecated: a TrialMetrics of the "validation" group."""

    def __init__(self, total_batches: int | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("steps_completed", total_batches)
        kwargs["group"] = "validation"
        super().__init__(**kwargs)


def _timestamp(value: Any) -> Any:
    """An RFC 3339 time as a datetime (what Determined's client gives), on Python 3.8 too:
    its fromisoformat takes neither "Z" nor other than 3 or 6 digits of a fraction."""
    if not isinstance(value, str):
        return value
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    match = re.match(r"^([^.]*)(?:\.(\d+))?(.*)$", text)
    if match is None:
        return value
    head, fraction, zone = match.groups()
    if fraction:
        head += "." + fraction[:6].ljust(6, "0")
    try:
        return datetime.datetime.fromisoformat(head + zone)
    except ValueError:
        return value


def _trial_metrics(report: dict[str, Any], group: str) -> TrialMetrics:
    """A MetricsReport of the metric streams: Determined keeps a validation's values under
    ``validation_metrics``, every other group's under ``avg_metrics``."""
    body = report.get("metrics") or {}
    key = "validation_metrics" if group == "validation" else "avg_metrics"
    return TrialMetrics(
        trial_id=int(report["trialId"]),
        trial_run_id=int(report.get("trialRunId") or 0),
        steps_completed=int(report.get("totalBatches") or 0),
        end_time=_timestamp(report.get("endTime")),
        metrics=body.get(key, body.get("avg_metrics")) or {},
        group=report.get("group") or group,
        batch_metrics=body.get("batch_metrics"),
    )


class Trial:
    """A trial: ``id``, ``experiment_id``, ``hparams``, ``state``, ``summary_metrics``, ... (after
    ``reload()``, which objects the client returns have done)."""

    def __init__(self, trial_id: int, session: Session) -> None:
        self.id = trial_id
        self._session = session
        self.experiment_id: int | None = None
        self.hparams: dict[str, Any] | None = None
        self.summary_metrics: dict[str, Any] | None = None
        self.state: TrialState | None = None
        self.restarts: int | None = None
        self.task_id: str | None = None
        self.start_time: str | None = None
        self.end_time: str | None = None
        self.total_batches_processed: int | None = None
        self.best_validation: dict[str, Any] | None = None
        self.latest_validation: dict[str, Any] | None = None
        self.searcher_metric_value: float | None = None

    @classmethod
    def _from_json(cls, session: Session, data: dict[str, Any]) -> Trial:
        trial = cls(int(data["id"]), session)
        trial._hydrate(data)
        return trial

    def _hydrate(self, data: dict[str, Any]) -> None:
        self.experiment_id = data.get("experimentId")
        self.hparams = data.get("hparams")
        self.summary_metrics = data.get("summaryMetrics")
        self.state = _enum(TrialState, data.get("state"))
        self.restarts = data.get("restarts")
        self.task_id = data.get("taskId")
        self.start_time = data.get("startTime")
        self.end_time = data.get("endTime")
        self.total_batches_processed = data.get("totalBatchesProcessed")
        self.best_validation = data.get("bestValidation")
        self.latest_validation = data.get("latestValidation")
        self.searcher_metric_value = data.get("searcherMetricValue")

    def reload(self) -> None:
        self._hydrate(self._session.request("GET", f"/api/v1/trials/{self.id}")["trial"])

    def get_experiment(self) -> Experiment:
        if self.experiment_id is None:
            self.reload()
        assert self.experiment_id is not None
        from harness.experimental._experiment import Experiment  # it imports this module

        exp = Experiment(int(self.experiment_id), self._session)
        exp.reload()
        return exp

    def kill(self) -> None:
        self._session.request("POST", f"/api/v1/trials/{self.id}/kill")

    def _config(self) -> dict[str, Any]:
        return self.get_experiment().config or {}

    def list_checkpoints(
        self,
        sort_by: CheckpointSortBy | str | None = None,
        order_by: OrderBy | None = None,
        max_results: int | None = None,
    ) -> list[Checkpoint]:
        """The trial's completed checkpoints, best (by the searcher metric) first by default."""
        path = f"/api/v1/trials/{self.id}/checkpoints"
        return _list_checkpoints(
            self._session, path, self._config(), sort_by, order_by, max_results
        )

    def get_checkpoints(
        self, sort_by: CheckpointSortBy | str | None = None, order_by: OrderBy | None = None
    ) -> list[Checkpoint]:
        """Deprecated: ``list_checkpoints``."""
        return self.list_checkpoints(sort_by, order_by)

    def top_checkpoint(
        self, sort_by: str | None = None, smaller_is_better: bool | None = None
    ) -> Checkpoint:
        return self.select_checkpoint(
            best=True, sort_by=sort_by, smaller_is_better=smaller_is_better
        )

    def select_checkpoint(
        self,
        latest: bool = False,
        best: bool = False,
        uuid: str | None = None,
        sort_by: str | None = None,
        smaller_is_better: bool | None = None,
    ) -> Checkpoint:
        """One checkpoint of the trial: exactly one of ``latest``, ``best`` or ``uuid``."""
        if sum([bool(latest), bool(best), uuid is not None]) != 1:
            raise AssertionError("pass exactly one of latest, best or uuid")
        if uuid is not None:
            return get_checkpoint_with(self._session, uuid)
        path = f"/api/v1/trials/{self.id}/checkpoints"
        found = [
            Checkpoint._from_json(self._session, c)
            for c in _pages(self._session, path, "checkpoints")
        ]
        if latest:
            done = [c for c in found if c.state is CheckpointState.COMPLETED]
            ordered = _ordered(done, lambda c: c.metadata.get("steps_completed"), True)
        else:
            ordered = _best(found, self._config(), sort_by, smaller_is_better)
        if not ordered:
            raise ValueError(f"trial {self.id} has no completed checkpoint")
        return ordered[0]

    def iter_logs(
        self,
        follow: bool = False,
        *,
        head: int | None = None,
        tail: int | None = None,
        container_ids: list[str] | None = None,
        rank_ids: list[int] | None = None,
        stdtypes: list[str] | None = None,
        min_level: str | None = None,
        timestamp_before: Any = None,
        timestamp_after: Any = None,
        sources: list[str] | None = None,
        search_text: str | None = None,
    ) -> Iterator[str]:
        """The trial's log lines (``follow``: until the trial ends); ``head``/``tail`` the first
        or last so many; the filters as Determined's. ``min_level`` a name such as "WARNING"."""
        if head is not None and tail is not None:
            raise ValueError("head and tail cannot both be set")
        if follow and tail is not None:
            raise ValueError("follow with tail is not offered: use follow alone")
        levels = None
        if min_level is not None:
            name = str(getattr(min_level, "name", min_level)).upper().replace("LOG_LEVEL_", "")
            levels = [f"LOG_LEVEL_{n}" for n in LOG_LEVELS[LOG_LEVELS.index(name) :]]

        def stamp(value: Any) -> Any:
            return value.isoformat() if hasattr(value, "isoformat") else value

        params: dict[str, Any] = {
            "follow": follow,
            "limit": head,
            "containerIds": container_ids,
            "rankIds": rank_ids,
            "stdtypes": stdtypes,
            "levels": levels,
            "timestampBefore": stamp(timestamp_before),
            "timestampAfter": stamp(timestamp_after),
            "sources": sources,
            "searchText": search_text,
        }
        lines = (
            (item.get("result") or item).get("message", "")
            for item in _ndjson(self._session, f"/api/v1/trials/{self.id}/logs", params, 3600.0)
        )
        if tail is None:
            yield from lines
        else:
            yield from list(lines)[-tail:] if tail else []

    def logs(
        self,
        follow: bool = False,
        *,
        head: int | None = None,
        tail: int | None = None,
        container_ids: list[str] | None = None,
        rank_ids: list[int] | None = None,
        stdtypes: list[str] | None = None,
        min_level: str | None = None,
        timestamp_before: Any = None,
        timestamp_after: Any = None,
        sources: list[str] | None = None,
        search_text: str | None = None,
    ) -> Iterator[str]:
        """Deprecated: ``iter_logs``."""
        return self.iter_logs(
            follow,
            head=head,
            tail=tail,
            container_ids=container_ids,
            rank_ids=rank_ids,
            stdtypes=stdtypes,
            min_level=min_level,
            timestamp_before=timestamp_before,
            timestamp_after=timestamp_after,
            sources=sources,
            search_text=search_text,
        )

    def iter_metrics(self, group: str) -> Iterator[TrialMetrics]:
        """The trial's live reports of ``group`` ("training", "validation" or any group it
        reported, e.g. with ``core_context.train.report_metrics``), in step order."""
        path = "/api/v1/trials/metrics/trial_metrics"
        params = {"trialIds": [self.id], "group": group}
        for line in _ndjson(self._session, path, params, 3600.0):
            error = line.get("error")
            if error is not None:  # the stream failed after it began
                status = int(error.get("httpCode") or 500)
                raise APIError("GET", path, status, error.get("message") or json.dumps(error))
            for report in (line.get("result") or {}).get("metrics") or []:
                yield _trial_metrics(report, group)

    def stream_metrics(self, group: str) -> Iterator[TrialMetrics]:
        """Deprecated: ``iter_metrics``."""
        return self.iter_metrics(group)

    def stream_training_metrics(self) -> Iterator[TrainingMetrics]:
        """Deprecated: ``iter_metrics("training")``."""
        for m in self.iter_metrics("training"):
            yield TrainingMetrics(**{**vars(m), "group": "training"})

    def stream_validation_metrics(self) -> Iterator[ValidationMetrics]:
        """Deprecated: ``iter_metrics("validation")``."""
        for m in self.iter_metrics("validation"):
            yield ValidationMetrics(**{**vars(m), "group": "validation"})

    def __repr__(self) -> str:
        return f"Trial(id={self.id})"
