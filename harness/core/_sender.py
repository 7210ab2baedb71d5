"""The reporting thread: queued calls to the master, in order, with metric reports batched.

A training loop that reports every few milliseconds would otherwise cost the master one request
and one database transaction per report, and its own process the Python work of a request (which
holds the GIL the training thread needs). So metric reports that arrive within
``batch_interval_s`` of the last send wait on this thread and go out together, in one request
and one transaction (``POST /api/v1/trials/{id}/metrics/batch``). The first report after a quiet
spell goes out at once, validation reports (the searcher acts on them) go out at once with any
waiting ones, and anything else queued (progress, status, TensorBoard work) first sends the
reports queued before it, so the master sees everything in the order it was reported.

A batch the master refuses as bad (400) or too large (413) is sent again one report at a time,
so one bad report loses only itself; the first error is raised by the caller's next call.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness._session import APIError, Transport

logger = logging.getLogger("harness.core")
QUEUE_SIZE = 1000
BATCH_INTERVAL_S = 1.0
# The master's limits on one batch request (controlplane.api.schemas.reports.MAX_BATCH_REPORTS,
# http.max_request_body_bytes); a batch is sent before it would pass either.
MAX_BATCH_REPORTS = 1000
MAX_BATCH_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True)
class Report:
    """One metrics report: its ``POST …/metrics`` body and an upper bound of its size."""

    trial_id: int
    body: dict[str, Any]
    size_bound: int

    @property
    def group(self) -> str:
        return str(self.body["group"])

    @property
    def steps(self) -> int:
        return int(self.body["metrics"]["stepsCompleted"])

    @property
    def urgent(self) -> bool:
        return self.group == "validation"


@dataclass(frozen=True)
class _Flush:
    done: threading.Event


# Queued items: a Report, a _Flush, a call, or _CLOSE.
_CLOSE = object()


class Sender:
    """One background thread that performs queued calls in order and batches metric reports."""

    def __init__(
        self,
        session: Transport,
        batch_interval_s: float = BATCH_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session = session
        self._interval = batch_interval_s
        self._clock = clock
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_SIZE)
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._pending: list[Report] = []
        self._pending_bytes = 0
        self._sent_at = -float("inf")

    # --- the caller's side --------------------------------------------------------------------

    def submit(self, call: Callable[[], None]) -> None:
        self._put(call)

    def submit_report(self, report: Report) -> None:
        self._put(report)

    def _put(self, item: Any) -> None:
        self.raise_pending()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="metrics-sender", daemon=True)
            self._thread.start()
        self._queue.put(item)

    def raise_pending(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def flush(self) -> None:
        """Wait until everything queued has been sent; raise the first error met."""
        if self._thread is not None:
            done = threading.Event()
            self._queue.put(_Flush(done))
            done.wait()
        self.raise_pending()

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(_CLOSE)
            while self._thread.is_alive():
                self._thread.join(10)
                if self._thread.is_alive():
                    logger.info("still sending metrics to the master...")
            self._thread = None
        self.raise_pending()

    # --- the thread ---------------------------------------------------------------------------

    def _wait_s(self) -> float | None:
        if not self._pending:
            return None
        return max(0.0, self._sent_at + self._interval - self._clock())

    def _next(self) -> Any:
        """The next queued item, or None when the waiting reports are due."""
        wait = self._wait_s()
        try:
            if wait == 0.0:
                return self._queue.get_nowait()
            return self._queue.get(timeout=wait)
        except queue.Empty:
            return None

    def _run(self) -> None:
        while True:
            item = self._next()
            if item is None:
                self._guarded(self._send_pending)
            elif isinstance(item, Report):
                self._add(item)
            else:
                self._guarded(self._send_pending)
                if item is _CLOSE:
                    return
                if isinstance(item, _Flush):
                    item.done.set()
                else:
                    self._guarded(item)

    def _add(self, report: Report) -> None:
        full = (
            len(self._pending) >= MAX_BATCH_REPORTS
            or self._pending_bytes + report.size_bound > MAX_BATCH_BYTES
        )
        if self._pending and full:
            self._guarded(self._send_pending)
        self._pending.append(report)
        self._pending_bytes += report.size_bound
        if report.urgent or self._clock() - self._sent_at >= self._interval:
            self._guarded(self._send_pending)

    def _guarded(self, call: Callable[[], None]) -> None:
        try:
            call()
        except BaseException as exc:  # raised by the caller's next call
            if self._error is None:
                self._error = exc
            else:
                logger.error("a queued call to the master failed: %s", exc)

    def _send_pending(self) -> None:
        reports, self._pending, self._pending_bytes = self._pending, [], 0
        if not reports:
            return
        self._sent_at = self._clock()
        if len(reports) > 1:
            try:
                body = {"reports": [r.body for r in reports]}
                self._session.request("POST", _batch_path(reports[0].trial_id), body=body)
                return
            except APIError as exc:
                if exc.status not in (400, 413):
                    raise
                logger.warning(
                    "the master refused a batch of metrics reports (%s); "
                    "sending them one at a time",
                    exc.message,
                )
        first: BaseException | None = None
        for report in reports:
            try:
                self._post_one(report)
            except APIError as exc:
                first = first or exc
        if first is not None:
            raise first

    def _post_one(self, report: Report) -> None:
        path = f"/api/v1/trials/{report.trial_id}/metrics"
        try:
            self._session.request("POST", path, body=report.body)
        except APIError as exc:
            if exc.status != 413:
                raise
            raise APIError(
                "POST",
                path,
                413,
                f"the master refused the {report.group} metrics report at step {report.steps} "
                f"as larger than its request body limit (http.max_request_body_bytes): "
                f"{exc.message}",
            ) from None


def _batch_path(trial_id: int) -> str:
    return f"/api/v1/trials/{trial_id}/metrics/batch"
