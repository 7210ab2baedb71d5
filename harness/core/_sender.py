"""The reporting thread: queued calls to the master, in order, with metric reports batched.

A training loop that reports every few milliseconds would otherwise cost the master one request
and one database transaction per report, and its own process the Python work of a request and a
thread woken per report (each wake takes the GIL the training thread needs, and on a busy node
the woken thread can be descheduled while holding it). So a report is only appended to a list:
reports that arrive within ``batch_interval_s`` of the last send wait there without waking the
thread, which sends them together at the end of the interval in one request and one transaction
(``POST /api/v1/trials/{id}/metrics/batch``). The first report after a quiet spell goes out at
once; a validation report (the searcher acts on it), any other call (progress, status,
TensorBoard work), a flush or close send everything queued before them, in the order it was
queued, so the master sees reports in the order they were made.

A batch the master refuses as bad (400) or too large (413) is sent again one report at a time,
so one bad report loses only itself; the first error is raised by the caller's next call.
"""

from __future__ import annotations

import collections
import logging
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
        self._cond = threading.Condition()
        self._items: collections.deque[Any] = collections.deque()  # guarded by _cond
        self._due = False  # something queued must go now (guarded by _cond)
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._sent_at = -float("inf")  # written by the thread, read by callers

    # --- the caller's side --------------------------------------------------------------------

    def submit(self, call: Callable[[], None]) -> None:
        self._put(call, due=True)

    def submit_report(self, report: Report) -> None:
        due = report.urgent or self._clock() - self._sent_at >= self._interval
        self._put(report, due=due)

    def _put(self, item: Any, *, due: bool) -> None:
        self.raise_pending()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="metrics-sender", daemon=True)
            self._thread.start()
        with self._cond:
            while len(self._items) >= QUEUE_SIZE:  # the master is slow: wait for room
                self._due = True
                self._cond.notify_all()
                self._cond.wait()
            self._items.append(item)
            if due or len(self._items) >= MAX_BATCH_REPORTS:
                self._due = True
                self._cond.notify_all()

    def raise_pending(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def flush(self) -> None:
        """Wait until everything queued has been sent; raise the first error met."""
        if self._thread is not None:
            done = threading.Event()
            self._put(_Flush(done), due=True)
            done.wait()
        self.raise_pending()

    def close(self) -> None:
        if self._thread is not None:
            self._put(_CLOSE, due=True)
            while self._thread.is_alive():
                self._thread.join(10)
                if self._thread.is_alive():
                    logger.info("still sending metrics to the master...")
            self._thread = None
        self.raise_pending()

    # --- the thread ---------------------------------------------------------------------------

    def _take(self) -> list[Any]:
        """Everything queued, once something must go or the interval has passed."""
        with self._cond:
            while True:
                if self._items:
                    wait = self._sent_at + self._interval - self._clock()
                    if self._due or wait <= 0:
                        break
                else:
                    wait = None
                self._cond.wait(wait)
            items = list(self._items)
            self._items.clear()
            self._due = False
            self._cond.notify_all()  # callers waiting for room
            return items

    def _run(self) -> None:
        while True:
            batch: list[Report] = []
            batch_bytes = 0
            for item in self._take():
                if isinstance(item, Report):
                    full = len(batch) >= MAX_BATCH_REPORTS
                    if batch and (full or batch_bytes + item.size_bound > MAX_BATCH_BYTES):
                        self._guarded(self._send, batch)
                        batch, batch_bytes = [], 0
                    batch.append(item)
                    batch_bytes += item.size_bound
                    continue
                if batch:
                    self._guarded(self._send, batch)
                    batch, batch_bytes = [], 0
                if item is _CLOSE:
                    return
                if isinstance(item, _Flush):
                    item.done.set()
                else:
                    self._guarded(item)
            if batch:
                self._guarded(self._send, batch)

    def _guarded(self, call: Callable[..., None], *args: Any) -> None:
        try:
            call(*args)
        except BaseException as exc:  # raised by the caller's next call
            if self._error is None:
                self._error = exc
            else:
                logger.error("a queued call to the master failed: %s", exc)

    def _send(self, reports: list[Report]) -> None:
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
