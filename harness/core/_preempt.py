"""PreemptContext: has the master asked this task to stop (pause, preemption, scale-down)?

A watcher thread asks ``GET /api/v1/allocations/{id}/signals/preemption`` once with
``timeout_seconds=0``, then long-polls with 60 s until the answer is true; a failed call is
retried after 10 s (the master may be restarting). The first ``should_preempt()`` that returns
True acknowledges the signal (``auto_ack``), which tells the master "restart me later" rather
than "finished".
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable

from harness._session import NO_RETRY, APIError, MasterUnreachable, Transport
from harness.core._distributed import DistributedContext

logger = logging.getLogger("harness.core")
LONG_POLL_S = 60
RETRY_AFTER_S = 10.0
FIRST_ANSWER_WAIT_S = 30.0


class PreemptMode(enum.Enum):
    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"
    WorkersAskMaster = "WORKERS_ASK_MASTER"


class _Watcher(threading.Thread):
    def __init__(self, session: Transport, allocation_id: str, wait: Callable[[float], bool]):
        super().__init__(name="preemption-watcher", daemon=True)
        self._session = session
        self._path = f"/api/v1/allocations/{allocation_id}/signals/preemption"
        self._wait = wait
        self.answered = threading.Event()
        self.preempted = threading.Event()
        self.stopping = threading.Event()

    def _poll(self, timeout_s: int) -> bool:
        answer = self._session.request(
            "GET",
            self._path,
            params={"timeout_seconds": timeout_s},
            timeout=timeout_s + 10,
            retry=NO_RETRY,
        )
        return bool((answer or {})["preempt"])

    def run(self) -> None:
        timeout_s = 0
        while not self.stopping.is_set():
            try:
                preempt = self._poll(timeout_s)
            except (APIError, MasterUnreachable, KeyError, TypeError) as exc:
                logger.debug("preemption poll failed, retrying: %s", exc)
                if self._wait(RETRY_AFTER_S):
                    return
                continue
            if preempt:
                self.preempted.set()
            self.answered.set()
            if preempt:
                return
            timeout_s = LONG_POLL_S


class PreemptContext:
    """Preemption signals of this allocation, as Determined's PreemptContext."""

    def __init__(
        self,
        session: Transport,
        allocation_id: str,
        dist: DistributedContext,
        preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    ) -> None:
        self._session = session
        self._allocation_id = allocation_id
        self._dist = dist
        self._mode = preempt_mode
        self._acked = False
        self._watcher: _Watcher | None = None
        self._stop = threading.Event()

    def start(self) -> PreemptContext:
        if self._dist.rank == 0 or self._mode is PreemptMode.WorkersAskMaster:
            self._watcher = _Watcher(self._session, self._allocation_id, self._stop.wait)
            self._watcher.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.stopping.set()

    def should_preempt(self, auto_ack: bool = True) -> bool:
        """True once the master wants this task to stop; blocks only for the first answer."""
        if self._watcher is None:
            if self._mode is PreemptMode.ChiefOnly:
                raise RuntimeError("only the chief may call should_preempt() in ChiefOnly mode")
            return self._dist.broadcast(False)
        # Blocking for the first answer keeps a task that is already preempted from starting
        # an expensive step; a master that is restarting must not stall training for long.
        self._watcher.answered.wait(FIRST_ANSWER_WAIT_S)
        preempted = self._watcher.preempted.is_set()
        if self._mode is PreemptMode.WorkersAskChief:
            preempted = self._dist.broadcast(preempted)
        if preempted and auto_ack and not self._acked:
            self.acknowledge_preemption_signal()
        return preempted

    def acknowledge_preemption_signal(self) -> None:
        """Tell the master this task stops because it was asked to, and expects a restart."""
        self._session.request(
            "POST", f"/api/v1/allocations/{self._allocation_id}/signals/ack_preemption", body={}
        )
        self._acked = True


class DummyPreemptContext(PreemptContext):
    """Off-cluster: never preempted."""

    def __init__(self, dist: DistributedContext) -> None:
        self._dist = dist
        self._watcher = None
        self._acked = False
        self._stop = threading.Event()
        self._mode = PreemptMode.WorkersAskChief

    def start(self) -> PreemptContext:
        return self

    def should_preempt(self, auto_ack: bool = True) -> bool:
        return False

    def acknowledge_preemption_signal(self) -> None:
        return None
