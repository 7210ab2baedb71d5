"""PreemptContext: has the master asked this task to stop (pause, preemption, scale-down)?

A watcher thread asks ``GET /api/v1/allocations/{id}/signals/preemption`` once with
``timeout_seconds=0``, then long-polls with 60 s until the answer is true; a failed call is
retried after 10 s (the master may be restarting). The first ``should_preempt()`` that returns
True acknowledges the signal (``auto_ack``), which tells the master "restart me later" rather
than "finished".

The long poll runs on a connection of the watcher's own (a clone of the task's session), so
``close()`` can abort it: otherwise a poll in flight would outlive the context by up to a minute,
holding a request open on the master (and a master's graceful shutdown waits for it).
"""

from __future__ import annotations

import enum
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

from harness._session import NO_RETRY, APIError, MasterUnreachable, Session, Transport
from harness.core._distributed import DistributedContext

logger = logging.getLogger("harness.core")
LONG_POLL_S = 60
RETRY_AFTER_S = 10.0
FIRST_ANSWER_WAIT_S = 30.0
CLOSE_JOIN_S = 1.0  # how long close() waits for the aborted watcher to notice and end


class PreemptMode(enum.Enum):
    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHIEF_ONLY"
    WorkersAskMaster = "WORKERS_ASK_MASTER"


def _is_timeout(exc: BaseException) -> bool:
    """A read timeout, possibly wrapped (urllib's URLError, the transport's MasterUnreachable)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (socket.timeout, TimeoutError)):  # distinct on 3.8
            return True
        seen = getattr(seen, "reason", None) if isinstance(seen, OSError) else seen.__cause__
        if seen is not None and not isinstance(seen, BaseException):
            return False
    return False


class _Watcher(threading.Thread):
    """Asks once with timeout 0, then long-polls (60 s) until the answer is true.

    A failed first call counts as "not preempted" (as in Determined: the trial starts rather than
    waits for a master that is restarting); a failed later call is retried after 10 s, a timed
    out one at once.
    """

    def __init__(self, session: Transport, allocation_id: str, wait: Callable[[float], bool]):
        super().__init__(name="preemption-watcher", daemon=True)
        # Our own connection when the transport can give us one: stop() aborts it mid-poll.
        self._own = session.clone() if isinstance(session, Session) else None
        self._session: Transport = self._own or session
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
        return (answer or {})["preempt"] is True

    def stop(self) -> None:
        """Ends the watcher: no further poll, and the one in flight is cut off (own session)."""
        self.stopping.set()
        if self._own is not None:
            self._own.abort()

    def run(self) -> None:
        timeout_s = 0
        while not self.stopping.is_set():
            try:
                preempt = self._poll(timeout_s)
            except (APIError, MasterUnreachable, KeyError, TypeError, OSError) as exc:
                if self.stopping.is_set():
                    return  # stop() cut the poll off: not a failure worth a warning
                if _is_timeout(exc):
                    logger.warning("timeout communicating with preemption API (retrying): %s", exc)
                    self.answered.set()
                    timeout_s = LONG_POLL_S
                    continue
                logger.warning("preemption API call failed (retrying in 10 s): %s", exc)
                self.answered.set()
                timeout_s = LONG_POLL_S
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
    """Preemption signals of this allocation (pause, a higher-priority job, a scale-down).

    ``preempt_mode`` says who asks: ``WorkersAskChief`` (default; every worker calls
    ``should_preempt()`` in step and the chief broadcasts its answer), ``ChiefOnly`` (only the
    chief calls it), ``WorkersAskMaster`` (each worker has its own watcher).
    """

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
        self._preempt_mode = PreemptMode(preempt_mode)
        self._ack_sent = False
        self._started = False
        self._stop = threading.Event()
        self._watcher: _Watcher | None = None
        if dist.get_rank() == 0 or self._preempt_mode is PreemptMode.WorkersAskMaster:
            self._watcher = _Watcher(session, allocation_id, self._stop.wait)

    def start(self) -> PreemptContext:
        if self._started:
            raise RuntimeError("you cannot call PreemptContext.start() multiple times")
        self._started = True
        if self._watcher is not None:
            self._watcher.start()
        return self

    def __enter__(self) -> PreemptContext:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        watcher = self._watcher
        if watcher is not None:
            watcher.stop()
            if watcher.is_alive() and watcher is not threading.current_thread():
                watcher.join(CLOSE_JOIN_S)

    def _not_chief_only(self) -> None:
        if self._preempt_mode is PreemptMode.ChiefOnly:
            raise RuntimeError(
                "PreemptContext was configured with preempt_mode=ChiefOnly but "
                f".should_preempt() was called from non-chief worker of rank={self._dist.rank}"
            )

    def should_preempt(self, auto_ack: bool = True) -> bool:
        """True once the master wants this task to stop; blocks only for the first answer.

        With ``auto_ack`` the first True also acknowledges the signal, which tells the master
        "restart me later" rather than "finished".
        """
        if not self._started:
            raise RuntimeError(
                "you cannot call PreemptContext.should_preempt() before PreemptContext.start()"
            )
        if self._watcher is None:
            self._not_chief_only()
            out = self._dist.broadcast(None)
            if not isinstance(out, bool):
                raise RuntimeError(f"the chief broadcast {out!r} instead of a preemption answer")
            return out
        # The first answer keeps a task that is already preempted from starting a step; it is
        # bounded, so that a master that does not answer cannot stall training.
        self._watcher.answered.wait(FIRST_ANSWER_WAIT_S)
        out = self._watcher.preempted.is_set()
        if out and auto_ack and not self._ack_sent:
            self.acknowledge_preemption_signal()
        if self._preempt_mode is PreemptMode.WorkersAskChief:
            self._dist.broadcast(out)
        return out

    def acknowledge_preemption_signal(self) -> None:
        """Tell the master this task stops because it was asked to, and expects a restart."""
        self._session.request(
            "POST", f"/api/v1/allocations/{self._allocation_id}/signals/ack_preemption", body={}
        )
        self._ack_sent = True


class DummyPreemptContext(PreemptContext):
    """Off-cluster: never preempted; the calling pattern of the mode is kept all the same."""

    def __init__(
        self,
        dist: DistributedContext,
        preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    ) -> None:
        self._dist = dist
        self._preempt_mode = PreemptMode(preempt_mode)
        self._started = False
        self._watcher = None
        self._stop = threading.Event()
        self._ack_sent = False

    def start(self) -> PreemptContext:
        if self._started:
            raise RuntimeError("you cannot call PreemptContext.start() multiple times")
        self._started = True
        return self

    def close(self) -> None:
        return None

    def should_preempt(self, auto_ack: bool = True) -> bool:
        if not self._started:
            raise RuntimeError(
                "you cannot call PreemptContext.should_preempt() before PreemptContext.start()"
            )
        if self._dist.rank == 0:
            if self._preempt_mode is PreemptMode.WorkersAskChief:
                self._dist.broadcast(False)
        else:
            self._not_chief_only()
            if self._preempt_mode is PreemptMode.WorkersAskChief:
                self._dist.broadcast(None)
        return False

    def acknowledge_preemption_signal(self) -> None:
        return None
