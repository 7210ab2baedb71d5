"""TrainContext: report training and validation metrics, progress and status to the master.

Reports go out on a background thread (a queue of at most 1000, ``_sender.py``), as in
Determined, so training does not wait on the network; reports made in quick succession go out
together, at most one request a second; the transport retries while the master restarts, and the
master stores a retried report once (it keys reports by trial, group, steps and run). An error the
thread met is raised by the next report call, and ``close`` drains the queue. Bad input fails
in the caller before anything is queued: a value that is not JSON-serialisable (TypeError
naming its key), a group name the master refuses, a report over the master's body limit.
NaN and infinities are sent as "NaN"/"Infinity"/"-Infinity", as Determined's client does.
"""

from __future__ import annotations

import enum
import json
import logging
import math
import operator
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness._session import APIError, Transport
from harness.core._distributed import DistributedContext
from harness.core._sender import Report, Sender
from harness.core._tensorboard import MetricWriter, TensorboardManager, TensorboardMode

logger = logging.getLogger("harness.core")

# Metric groups (Determined's determined.common.util._LEGACY_TRAINING, _LEGACY_VALIDATION and
# _INFERENCE): report_training_metrics and report_validation_metrics report into the first two.
GROUP_TRAINING = "training"
GROUP_VALIDATION = "validation"
GROUP_INFERENCE = "inference"
# TensorBoard AUTO: event files are written at most this often (and at each validation report
# and at close), so a report every few milliseconds does not write one each time.
TB_WRITE_INTERVAL_S = 1.0


class EarlyExitReason(enum.Enum):
    INVALID_HP = "EXITED_REASON_INVALID_HP"
    USER_REQUESTED_STOP = "EXITED_REASON_USER_REQUESTED_STOP"


# What our master accepts (controlplane: http.max_request_body_bytes, services/trials.py).
MAX_REPORT_BYTES = 128 * 1024 * 1024
MAX_METRIC_VALUES = 1_000_000
# Determined refuses only an empty group and a '.' (it splits "group.metric" ids on the first
# dot); control characters are refused too (PostgreSQL text cannot hold NUL), and 128
# characters is what the master stores.
_GROUP = re.compile(r"[^.\x00-\x1f\x7f]{1,128}")


class InvalidMetricValue(ValueError, RuntimeError):
    """A metric value that cannot be reported (Determined raises RuntimeError for None)."""


def _plain(value: Any) -> Any:
    """numpy / torch scalars and arrays become JSON numbers and lists."""
    if hasattr(value, "item") and callable(value.item):
        try:
            return value.item()
        except (ValueError, RuntimeError):
            pass
    if hasattr(value, "tolist") and callable(value.tolist):
        return value.tolist()
    raise TypeError(f"a value of type {type(value).__name__} is not JSON-serialisable")


def _one(key: str, value: Any, where: str) -> Any:
    try:
        return json.loads(json.dumps(value, default=_plain))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{where} metric {key!r} = {value!r:.80} cannot be reported: {exc}"
        ) from None


def to_json_metrics(
    metrics: dict[str, Any], *, validation: bool = False, where: str = "training"
) -> dict[str, Any]:
    """A JSON-able copy; NaN/inf become the strings "NaN"/"Infinity"/"-Infinity" as Determined's
    client sends them. Bytes are dropped from validation metrics; a None validation value is an
    error (Determined raises too). A value that cannot be serialised is a TypeError naming its
    key, raised before anything is sent."""
    if not isinstance(metrics, dict):
        raise TypeError(f"{where} metrics must be a dict, got {type(metrics).__name__}")
    out: dict[str, Any] = {}
    dropped = []
    for key, value in metrics.items():
        if not isinstance(key, str):
            raise TypeError(f"{where} metric names must be strings, got {key!r}")
        if validation and value is None:
            raise InvalidMetricValue(
                f"validation metric {key!r} returned an invalid scalar value: None"
            )
        if validation and isinstance(value, (bytes, bytearray)):
            dropped.append(key)
            continue
        # Plain numbers, strings, bools and None are JSON already: only other values (numpy and
        # torch scalars, containers) pay for a round trip through json, on the training thread.
        out[key] = value if type(value) in _JSON_SCALARS else _one(key, value, where)
    if dropped:
        logger.warning("Removed non serializable metrics: %s", ", ".join(dropped))
    return _finite(out)


_JSON_SCALARS = frozenset({float, int, bool, str, type(None)})
# What one scalar metric of a name ≤ 128 characters and a string value ≤ 64 characters can take
# on the wire, with every character escaped as \uXXXX.
_ITEM_BYTES = 6 * (128 + 64) + 64


def _surely_small(body: dict[str, Any], values: int) -> bool:
    """True when the report cannot reach the limit: only scalars and short strings."""
    if values * _ITEM_BYTES + 1024 > MAX_REPORT_BYTES:
        return False
    metrics = body["metrics"]["metrics"]
    groups = [metrics["avgMetrics"], *(metrics["batchMetrics"] or ())]
    return all(
        type(v) in _JSON_SCALARS and (type(v) is not str or len(v) <= 64) and len(k) <= 128
        for group in groups
        for k, v in group.items()
    )


def check_report_size(body: dict[str, Any], values: int) -> int:
    """Refuse a report our master would refuse, before it is queued; return an upper bound of
    its size in bytes."""
    if values > MAX_METRIC_VALUES:
        raise ValueError(
            f"a metrics report holds {values} values; the master accepts at most "
            f"{MAX_METRIC_VALUES} per report: split it"
        )
    if _surely_small(body, values):  # the common report: no need to serialise it here
        return values * _ITEM_BYTES + 1024
    size = len(json.dumps(body, separators=(",", ":")))
    if size > MAX_REPORT_BYTES:
        raise ValueError(
            f"a metrics report of {size} bytes is over the master's limit of {MAX_REPORT_BYTES} "
            "bytes (http.max_request_body_bytes): report fewer or smaller metrics"
        )
    return size + 1024


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def check_steps(steps: Any) -> int:
    """An int (numpy and torch integers too, through ``__index__``), 0 or more."""
    if isinstance(steps, bool):
        raise TypeError(f"steps_completed must be an int, got {steps!r}")
    try:
        value = operator.index(steps)
    except TypeError:
        raise TypeError(f"steps_completed must be an int, got {steps!r}") from None
    if value < 0:
        raise ValueError(f"steps_completed must be 0 or more, got {value}")
    return value


def check_progress(progress: Any) -> float:
    """A number in [0, 1] (numpy/torch scalars too) as a float; NaN is out of range."""
    try:
        value = float(progress) if not isinstance(progress, (bool, str, bytes)) else None
    except (TypeError, ValueError):
        value = None
    if value is None:
        raise TypeError(f"progress must be a number, got {progress!r}")
    if not 0 <= value <= 1:
        raise ValueError(f"Progress should be between 0 and 1, not {progress}")
    return value


def check_group(group: str) -> None:
    if not isinstance(group, str) or not _GROUP.fullmatch(group):
        raise ValueError(
            f"invalid metric group {group!r}: use 1-128 characters, no '.' and no control"
            " characters"
        )


class TrainContext:
    """Metrics, progress and status of a trial, reported by the chief (Determined's API)."""

    def __init__(
        self,
        session: Transport,
        trial_id: int,
        run_id: int,
        exp_id: int,
        distributed: DistributedContext,
        tensorboard_mode: TensorboardMode = TensorboardMode.MANUAL,
        tensorboard_manager: TensorboardManager | None = None,
        tbd_writer: MetricWriter | None = None,
    ) -> None:
        if tensorboard_mode is not TensorboardMode.MANUAL and tensorboard_manager is None:
            raise ValueError("either set TensorboardMode.MANUAL, or pass a tensorboard manager.")
        self._session = session
        self._trial_id = trial_id
        self._run_id = run_id
        self._exp_id = exp_id
        self._dist = distributed
        self._tensorboard_mode = TensorboardMode(tensorboard_mode)
        self._tensorboard_manager = tensorboard_manager
        self._tbd_writer = tbd_writer
        self._sender = Sender(session)
        # AUTO mode writes event files at most every TB_WRITE_INTERVAL_S: the writer's Python
        # work holds the GIL on the sender thread, which a training thread feels at every report.
        self._tb_pending: list[tuple[str, float, int]] = []
        self._tb_written_at = -math.inf

    def _flush_reports(self) -> None:
        """Wait until every report made so far is at the master (raises what sending met)."""
        self._sender.flush()

    def _submit(self, method: str, path: str, body: Any) -> None:
        self._sender.submit(lambda: self._session.request(method, path, body=body))

    def _report_trial_metrics(
        self,
        group: str,
        steps_completed: int,
        metrics: dict[str, Any],
        batch_metrics: list[dict[str, Any]] | None = None,
    ) -> None:
        check_group(group)
        steps_completed = check_steps(steps_completed)
        validation = group == GROUP_VALIDATION
        avg = to_json_metrics(metrics, validation=validation, where=group)
        batches = None
        if batch_metrics is not None:
            batches = [to_json_metrics(b, where=f"{group} batch") for b in batch_metrics]
        body = {
            "group": group,
            "metrics": {
                "trialId": self._trial_id,
                "trialRunId": self._run_id,
                "stepsCompleted": steps_completed,
                "reportTime": None,
                "metrics": {"avgMetrics": avg, "batchMetrics": batches},
            },
        }
        size = check_report_size(body, len(avg) + sum(len(b) for b in batches or []))
        # The master keys a report by (trial, group, steps, run): a retried POST is stored once.
        self._sender.submit_report(Report(self._trial_id, body, size))
        if self._tensorboard_mode is TensorboardMode.AUTO:
            # Scalars are picked here (the caller's values may change); writing the event file
            # and copying files to storage happen on the sender thread, off the training step.
            if group == GROUP_TRAINING:
                self._tb_pending += MetricWriter.training_items(
                    steps_completed, metrics, batch_metrics
                )
            elif validation:
                self._tb_pending += MetricWriter.validation_items(steps_completed, metrics)
            now = time.monotonic()
            if validation or now - self._tb_written_at >= TB_WRITE_INTERVAL_S:
                items, self._tb_pending, self._tb_written_at = self._tb_pending, [], now
                self._sender.submit(lambda: self._tensorboard_step(items))

    def _tensorboard_step(self, items: list[tuple[str, float, int]]) -> None:
        """Never fails training: TensorBoard trouble is logged (Determined logs it too)."""
        try:
            if self._tbd_writer is not None and items:
                self._tbd_writer.add(items)
            assert self._tensorboard_manager is not None
            self._tensorboard_manager.sync(rank=self._dist.rank)
        except Exception as exc:
            logger.warning("TensorBoard files were not written or synced: %s", exc)

    def report_training_metrics(
        self,
        steps_completed: int,
        metrics: dict[str, Any],
        batch_metrics: list[dict[str, Any]] | None = None,
    ) -> None:
        """Report training metrics (queued; sent by a background thread)."""
        logger.info(
            "report_training_metrics(steps_completed=%s, metrics=%s)", steps_completed, metrics
        )
        self._report_trial_metrics(GROUP_TRAINING, steps_completed, metrics, batch_metrics)

    def report_validation_metrics(self, steps_completed: int, metrics: dict[str, Any]) -> None:
        """Report validation metrics; the searcher reads ``searcher.metric`` from them."""
        logger.info(
            "report_validation_metrics(steps_completed=%s, metrics=%s)", steps_completed, metrics
        )
        self._report_trial_metrics(GROUP_VALIDATION, steps_completed, metrics)

    def report_metrics(self, group: str, steps_completed: int, metrics: dict[str, Any]) -> None:
        """Report metrics of any group (any name but an empty one or one with a '.')."""
        logger.info(
            "report_metrics(group=%s, steps_completed=%s, metrics=%s)",
            group,
            steps_completed,
            metrics,
        )
        self._report_trial_metrics(group, steps_completed, metrics)

    def report_progress(self, progress: float) -> None:
        """Progress in [0, 1], shown by the WebUI and ``det experiment list``."""
        body = {"progress": check_progress(progress), "is_raw": True}
        self._submit("POST", f"/api/v1/trials/{self._trial_id}/progress", body)

    def set_status(self, status: str) -> None:
        """A short text the WebUI shows for what the trial is doing."""
        self._submit(
            "POST", f"/api/v1/trials/{self._trial_id}/runner/metadata", {"state": str(status)}
        )

    def set_metadata(self, metadata: dict[str, Any]) -> dict[str, Any] | None:
        """Replace the run's metadata; returns what the master stored."""
        self._sender.raise_pending()
        body = {
            "metadata": to_json_metrics(metadata, where="run metadata"),
            "runId": self._trial_id,
        }
        answer = self._session.request("POST", f"/api/v1/runs/{self._trial_id}/metadata", body=body)
        return (answer or {}).get("metadata")

    def get_metadata(self) -> dict[str, Any] | None:
        answer = self._session.request("GET", f"/api/v1/runs/{self._trial_id}/metadata")
        return (answer or {}).get("metadata")

    def report_early_exit(self, reason: EarlyExitReason) -> None:
        """Tell the searcher why this trial stops early (``InvalidHP`` reports it for you)."""
        self._sender.flush()
        try:
            self._session.request(
                "POST",
                f"/api/v1/trials/{self._trial_id}/early_exit",
                body={"reason": EarlyExitReason(reason).value},
            )
        except APIError as exc:
            if exc.status != 400:  # 400: already reported
                raise
            logger.warning("early exit has already been reported for this trial, ignoring")

    def get_experiment_best_validation(self) -> float | None:
        """The best ``searcher.metric`` validation of the experiment so far; None if none yet."""
        self._sender.flush()  # reports in flight count too
        try:
            answer = self._session.request(
                "GET",
                f"/api/v1/experiments/{self._exp_id}/searcher/best_searcher_validation_metric",
            )
        except APIError as exc:
            if exc.status == 404:
                return None
            raise
        metric = (answer or {}).get("metric")
        return None if metric is None else float(metric)

    def get_tensorboard_path(self) -> Path:
        """The local directory for TensorBoard files of this worker."""
        if self._tensorboard_manager is None:
            raise ValueError("tensorboard manager is required for this method")
        return self._tensorboard_manager.base_path

    def upload_tensorboard_files(
        self,
        selector: Callable[[Path], bool] = lambda _: True,
        mangler: Callable[[Path, int], Path] = lambda p, __: p,
    ) -> None:
        """Copy the files under ``get_tensorboard_path()`` to checkpoint storage (MANUAL mode)."""
        if self._tensorboard_mode is TensorboardMode.AUTO:
            raise RuntimeError("upload_tensorboard_files can only be used in MANUAL mode")
        if self._tensorboard_manager is None:
            raise ValueError("tensorboard manager is required for this method")
        self._tensorboard_manager.sync(selector, mangler, self._dist.rank, force=True)

    def close(self) -> None:
        try:
            if self._tb_pending:
                items, self._tb_pending = self._tb_pending, []
                self._sender.submit(lambda: self._tensorboard_step(items))
            self._sender.close()
        finally:
            if self._tbd_writer is not None:
                self._tbd_writer.close()
            auto = self._tensorboard_mode is TensorboardMode.AUTO
            if self._tensorboard_manager is not None and auto:
                try:
                    self._tensorboard_manager.sync(rank=self._dist.rank, force=True)
                except Exception as exc:
                    logger.warning("TensorBoard files were not synced: %s", exc)


class DummyTrainContext(TrainContext):
    """Off-cluster: metrics go to the console and, one JSON object a line, to ``metrics_file``."""

    def __init__(
        self,
        tensorboard_path: Path | None = None,
        metrics_file: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._tbd_directory = tensorboard_path
        self._metrics_file = metrics_file
        self._clock = clock
        self._announced = False

    def _write(self, record: dict[str, Any], line: str) -> None:
        print(f"[harness] {line}", flush=True)
        if self._metrics_file is None:
            return
        if not self._announced:
            logger.info("off-cluster metrics are appended to %s", self._metrics_file)
            self._metrics_file.parent.mkdir(parents=True, exist_ok=True)
            self._announced = True
        with open(self._metrics_file, "a", encoding="utf-8") as f:
            f.write(json.dumps({"time": self._clock(), **record}) + "\n")

    def _report_trial_metrics(
        self,
        group: str,
        steps_completed: int,
        metrics: dict[str, Any],
        batch_metrics: list[dict[str, Any]] | None = None,
    ) -> None:
        check_group(group)
        steps_completed = check_steps(steps_completed)
        avg = to_json_metrics(metrics, validation=group == "validation", where=group)
        record: dict[str, Any] = {"group": group, "steps_completed": steps_completed}
        record["metrics"] = avg
        if batch_metrics is not None:
            record["batch_metrics"] = [to_json_metrics(b, where=group) for b in batch_metrics]
        self._write(record, f"{group} metrics at step {steps_completed}: {json.dumps(avg)}")

    def report_progress(self, progress: float) -> None:
        check_progress(progress)
        logger.info("report_progress with progress=%s", progress)

    def set_status(self, status: str) -> None:
        self._write({"status": str(status)}, f"status: {status}")

    def set_metadata(self, metadata: dict[str, Any]) -> dict[str, Any] | None:
        plain = to_json_metrics(metadata, where="run metadata")
        self._write({"metadata": plain}, f"run metadata: {json.dumps(plain)}")
        return metadata

    def get_metadata(self) -> dict[str, Any] | None:
        return None

    def report_early_exit(self, reason: EarlyExitReason) -> None:
        value = EarlyExitReason(reason).value
        self._write({"early_exit": value}, f"early exit: {value}")

    def get_experiment_best_validation(self) -> float | None:
        return None

    def get_tensorboard_path(self) -> Path:
        return self._tbd_directory  # type: ignore[return-value]

    def upload_tensorboard_files(
        self,
        selector: Callable[[Path], bool] = lambda _: True,
        mangler: Callable[[Path, int], Path] = lambda p, __: p,
    ) -> None:
        logger.info("upload_tensorboard_files()")

    def close(self) -> None:
        return None
