"""TrainContext: report training and validation metrics, progress and status to the master.

Reports go out on a background thread (a queue of at most 1000), as in Determined, so training
does not wait on the network; the transport retries while the master restarts. An error the
thread met is raised by the next report call, and ``close`` drains the queue.
"""

from __future__ import annotations

import enum
import json
import logging
import math
import queue
import threading
from collections.abc import Callable
from typing import Any

from harness._session import APIError, Transport
from harness.core._distributed import DistributedContext

logger = logging.getLogger("harness.core")
QUEUE_SIZE = 1000


class EarlyExitReason(enum.Enum):
    INVALID_HP = "EXITED_REASON_INVALID_HP"
    USER_REQUESTED_STOP = "EXITED_REASON_USER_REQUESTED_STOP"


def _plain(value: Any) -> Any:
    """numpy / torch scalars and arrays become JSON numbers and lists."""
    if hasattr(value, "item") and callable(value.item):
        try:
            return value.item()
        except (ValueError, RuntimeError):
            pass
    if hasattr(value, "tolist") and callable(value.tolist):
        return value.tolist()
    raise TypeError(f"metric value {value!r} of type {type(value).__name__} is not JSON-able")


def to_json_metrics(metrics: dict[str, Any], *, validation: bool = False) -> dict[str, Any]:
    """A JSON-able copy; NaN/inf become strings as Determined's wire does. Bytes are dropped
    from validation metrics; a None validation value is an error (Determined raises too)."""
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        if not isinstance(key, str):
            raise TypeError(f"metric names must be strings, got {key!r}")
        if validation and value is None:
            raise ValueError(f"validation metric {key!r} is None")
        if validation and isinstance(value, (bytes, bytearray)):
            continue
        out[key] = json.loads(json.dumps(value, default=_plain))
    return _finite(out)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


class _Sender:
    """One background thread that performs queued calls in order."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue(maxsize=QUEUE_SIZE)
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        while True:
            call = self._queue.get()
            try:
                if call is None:
                    return
                call()
            except BaseException as exc:
                self._error = exc
            finally:
                self._queue.task_done()

    def submit(self, call: Callable[[], None]) -> None:
        self.raise_pending()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="metrics-sender", daemon=True)
            self._thread.start()
        self._queue.put(call)

    def raise_pending(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            while self._thread.is_alive():
                self._thread.join(10)
                if self._thread.is_alive():
                    logger.info("still sending metrics to the master...")
            self._thread = None
        self.raise_pending()


class TrainContext:
    """Metrics and progress of a trial, reported by the chief."""

    def __init__(
        self,
        session: Transport,
        trial_id: int,
        run_id: int,
        exp_id: int,
        distributed: DistributedContext,
    ) -> None:
        self._session = session
        self._trial_id = trial_id
        self._run_id = run_id
        self._exp_id = exp_id
        self._dist = distributed
        self._sender = _Sender()

    def _post_metrics(
        self,
        group: str,
        steps_completed: int,
        avg: dict[str, Any],
        batch_metrics: list[dict[str, Any]] | None,
    ) -> None:
        body = {
            "group": group,
            "metrics": {
                "trialId": self._trial_id,
                "trialRunId": self._run_id,
                "stepsCompleted": int(steps_completed),
                "reportTime": None,
                "metrics": {"avgMetrics": avg, "batchMetrics": batch_metrics},
            },
        }
        self._sender.submit(
            lambda: self._session.request(
                "POST", f"/api/v1/trials/{self._trial_id}/metrics", body=body
            )
        )

    def report_metrics(self, group: str, steps_completed: int, metrics: dict[str, Any]) -> None:
        if not group or "." in group:
            raise ValueError(f"metric group {group!r} must be non-empty and contain no '.'")
        validation = group == "validation"
        self._post_metrics(
            group, steps_completed, to_json_metrics(metrics, validation=validation), None
        )

    def report_training_metrics(
        self,
        steps_completed: int,
        metrics: dict[str, Any],
        batch_metrics: list[dict[str, Any]] | None = None,
    ) -> None:
        batches = [to_json_metrics(b) for b in batch_metrics] if batch_metrics else None
        self._post_metrics("training", steps_completed, to_json_metrics(metrics), batches)

    def report_validation_metrics(self, steps_completed: int, metrics: dict[str, Any]) -> None:
        self._post_metrics(
            "validation", steps_completed, to_json_metrics(metrics, validation=True), None
        )

    def report_progress(self, progress: float) -> None:
        if not 0 <= progress <= 1:
            raise ValueError(f"progress must be between 0 and 1, got {progress}")
        body = {"progress": float(progress), "is_raw": True}
        self._sender.submit(
            lambda: self._session.request(
                "POST", f"/api/v1/trials/{self._trial_id}/progress", body=body
            )
        )

    def set_status(self, status: str) -> None:
        body = {"state": status}
        self._sender.submit(
            lambda: self._session.request(
                "POST", f"/api/v1/trials/{self._trial_id}/runner/metadata", body=body
            )
        )

    def report_early_exit(self, reason: EarlyExitReason) -> None:
        self._sender.close()
        try:
            self._session.request(
                "POST",
                f"/api/v1/trials/{self._trial_id}/early_exit",
                body={"reason": EarlyExitReason(reason).value},
            )
        except APIError as exc:
            if exc.status != 400:  # 400: already reported
                raise

    def get_experiment_best_validation(self) -> float | None:
        self._sender.close()  # reports in flight count too
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

    def close(self) -> None:
        self._sender.close()


class DummyTrainContext(TrainContext):
    """Off-cluster: metrics are logged, nothing is sent."""

    def __init__(self) -> None:
        pass

    def _log(self, what: str, steps: int, metrics: dict[str, Any]) -> None:
        print(f"[harness] {what} metrics at step {steps}: {metrics}", flush=True)

    def report_metrics(self, group: str, steps_completed: int, metrics: dict[str, Any]) -> None:
        self._log(group, steps_completed, to_json_metrics(metrics))

    def report_training_metrics(
        self,
        steps_completed: int,
        metrics: dict[str, Any],
        batch_metrics: list[dict[str, Any]] | None = None,
    ) -> None:
        self._log("training", steps_completed, to_json_metrics(metrics))

    def report_validation_metrics(self, steps_completed: int, metrics: dict[str, Any]) -> None:
        self._log("validation", steps_completed, to_json_metrics(metrics, validation=True))

    def report_progress(self, progress: float) -> None:
        return None

    def set_status(self, status: str) -> None:
        print(f"[harness] status: {status}", flush=True)

    def report_early_exit(self, reason: EarlyExitReason) -> None:
        print(f"[harness] early exit: {EarlyExitReason(reason).value}", flush=True)

    def get_experiment_best_validation(self) -> float | None:
        return None

    def close(self) -> None:
        return None
