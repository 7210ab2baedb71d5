"""The bookkeeping every search method shares (Determined's searcher.go).

`Searcher` owns the request counter, the random generator, which trials were requested, told to
stop or close, and closed, and it decides Shutdown. A `Method` (random, grid, ASHA, ...) only
decides which trials to create, stop, close or promote. Everything is kept in plain containers
so a snapshot is JSON and a restored searcher continues exactly where the original was.
"""

from __future__ import annotations

import random
from typing import Any, Protocol

from .ops import (
    EXIT_REASONS,
    Close,
    Create,
    Event,
    Op,
    Promote,
    Shutdown,
    Stop,
    TrialClosed,
    TrialCreated,
    TrialExitedEarly,
    TrialProgress,
    ValidationReported,
)
from .rng import rng_from_state, rng_state
from .space import new_seed

SNAPSHOT_VERSION = 1


class Context(Protocol):
    """What a method may use from its searcher."""

    rng: random.Random

    def create(self, hparams: dict[str, Any]) -> Create: ...

    def trial_progress(self) -> dict[str, float]: ...

    def closed(self) -> list[str]: ...


class Method(Protocol):
    def initial(self, ctx: Context) -> list[Op]: ...

    def trial_created(self, ctx: Context, request_id: str) -> list[Op]: ...

    def validation(self, ctx: Context, request_id: str, metrics: dict[str, Any]) -> list[Op]: ...

    def exited_early(self, ctx: Context, request_id: str, reason: str) -> list[Op]: ...

    def trial_closed(self, ctx: Context, request_id: str) -> list[Op]: ...

    def progress(self, ctx: Context) -> float: ...

    def snapshot(self) -> dict[str, Any]: ...


class Searcher:
    """A search: events in, operations out. Pure and deterministic given its seed."""

    def __init__(self, name: str, method: Method, rng: random.Random) -> None:
        self.name = name
        self.method = method
        self.rng = rng
        self._next_request = 1
        self._requested: list[str] = []
        self._closed: dict[str, None] = {}
        self._exits: dict[str, str] = {}
        self._progress: dict[str, float] = {}
        self._paused: dict[str, None] = {}
        self._closing: dict[str, None] = {}
        self._shutdown = False
        self._started = False

    # Context for methods.
    def create(self, hparams: dict[str, Any]) -> Create:
        request_id = f"r{self._next_request}"
        self._next_request += 1
        return Create(request_id=request_id, hparams=hparams, seed=new_seed(self.rng))

    def trial_progress(self) -> dict[str, float]:
        return self._progress

    def closed(self) -> list[str]:
        return list(self._closed)

    # The interface.
    def initial_operations(self) -> list[Op]:
        """The first trials. Called once per search (not again after a restore)."""
        if self._started:
            return []
        self._started = True
        return self._record(self.method.initial(self))

    def on_event(self, event: Event) -> list[Op]:
        if self._shutdown:
            return []
        request_id = event.request_id
        if request_id not in self._progress:
            raise ValueError(f"the searcher made no trial with request id {request_id!r}")
        if isinstance(event, TrialCreated):
            return self._record(self.method.trial_created(self, request_id))
        if isinstance(event, TrialProgress):
            if request_id not in self._closed:
                self._progress[request_id] = min(1.0, max(0.0, float(event.progress)))
            return []
        if isinstance(event, ValidationReported):
            # A trial told to pause or close may still report once on its way out; the
            # searcher has already decided about it.
            if request_id in self._closed or request_id in self._closing:
                return []
            if request_id in self._paused:
                return []
            return self._record(self.method.validation(self, request_id, event.metrics))
        if isinstance(event, TrialExitedEarly):
            if event.reason not in EXIT_REASONS:
                raise ValueError(
                    f"unknown exit reason {event.reason!r}; expected one of {EXIT_REASONS}"
                )
            if request_id in self._closed or request_id in self._exits:
                return []
            self._exits[request_id] = event.reason
            return self._record(self.method.exited_early(self, request_id, event.reason))
        if isinstance(event, TrialClosed):
            if request_id in self._closed:
                return []
            self._closed[request_id] = None
            self._paused.pop(request_id, None)
            ops = self._record(self.method.trial_closed(self, request_id))
            if len(self._closed) == len(self._requested):
                ops.append(self._shutdown_op())
            return ops
        raise TypeError(f"not a searcher event: {event!r}")

    def progress(self) -> float:
        if self._shutdown:
            return 1.0
        return min(1.0, max(0.0, self.method.progress(self)))

    def snapshot(self) -> dict[str, Any]:
        return {
            "version": SNAPSHOT_VERSION,
            "name": self.name,
            "next_request": self._next_request,
            "rng": rng_state(self.rng),
            "requested": list(self._requested),
            "closed": list(self._closed),
            "exits": dict(self._exits),
            "progress": dict(self._progress),
            "paused": list(self._paused),
            "closing": list(self._closing),
            "shutdown": self._shutdown,
            "started": self._started,
            "method": self.method.snapshot(),
        }

    def load(self, snapshot: dict[str, Any]) -> None:
        """Take over a snapshot's common state (the method is restored by the factory)."""
        self._next_request = int(snapshot["next_request"])
        self.rng = rng_from_state(snapshot["rng"])
        self._requested = list(snapshot["requested"])
        self._closed = dict.fromkeys(snapshot["closed"])
        self._exits = dict(snapshot["exits"])
        self._progress = {k: float(v) for k, v in snapshot["progress"].items()}
        self._paused = dict.fromkeys(snapshot["paused"])
        self._closing = dict.fromkeys(snapshot["closing"])
        self._shutdown = bool(snapshot["shutdown"])
        self._started = bool(snapshot["started"])

    # Helpers.
    def _record(self, ops: list[Op]) -> list[Op]:
        for op in ops:
            if isinstance(op, Create):
                self._requested.append(op.request_id)
                self._progress[op.request_id] = 0.0
            elif isinstance(op, Stop):
                self._paused[op.request_id] = None
            elif isinstance(op, Promote):
                self._paused.pop(op.request_id, None)
            elif isinstance(op, Close):
                self._closing[op.request_id] = None
                self._paused.pop(op.request_id, None)
        return list(ops)

    def _shutdown_op(self) -> Shutdown:
        self._shutdown = True
        total = len(self._requested)
        reasons = list(self._exits.values())
        return Shutdown(
            cancel=reasons.count("USER_CANCELED") >= total,
            failure=reasons.count("ERRORED") >= total,
        )
