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

    def open_progress(self) -> dict[str, float]: ...

    def closed_count(self) -> int: ...


class Method(Protocol):
    def initial(self, ctx: Context) -> list[Op]: ...

    def trial_created(self, ctx: Context, request_id: str) -> list[Op]: ...

    def validation(self, ctx: Context, request_id: str, metrics: dict[str, Any]) -> list[Op]: ...

    def exited_early(self, ctx: Context, request_id: str, reason: str) -> list[Op]: ...

    def trial_closed(self, ctx: Context, request_id: str) -> list[Op]: ...

    def progress(self, ctx: Context) -> float: ...

    def snapshot(self) -> dict[str, Any]: ...


class Searcher:
    """A search: events in, operations out. Pure and deterministic given its seed.

    Only open trials are kept by name (closed ones are counted), so a snapshot of a search with
    10,000 finished trials stays small for the searchers whose method needs no history.
    """

    def __init__(self, name: str, method: Method, rng: random.Random) -> None:
        self.name = name
        self.method = method
        self.rng = rng
        self._next_request = 1
        self._open: dict[str, float] = {}
        """Requested and not closed: request id -> reported progress."""
        self._closed = 0
        self._exited: dict[str, None] = {}
        self._cancels = 0
        self._failures = 0
        self._paused: dict[str, None] = {}
        self._closing: dict[str, None] = {}
        self._shutdown = False
        self._started = False

    # Context for methods.
    def create(self, hparams: dict[str, Any]) -> Create:
        request_id = f"r{self._next_request}"
        self._next_request += 1
        self._open[request_id] = 0.0
        return Create(request_id=request_id, hparams=hparams, seed=new_seed(self.rng))

    def open_progress(self) -> dict[str, float]:
        return self._open

    def closed_count(self) -> int:
        return self._closed

    # The interface.
    def initial_operations(self) -> list[Op]:
        """The first trials. Called once per search (not again after a restore)."""
        if self._started:
            return []
        self._started = True
        return self._record(self.method.initial(self))

    def _issued(self, request_id: str) -> bool:
        number = request_id[1:]
        return (
            request_id.startswith("r")
            and number.isascii()
            and number.isdigit()
            and not number.startswith("0")
            and int(number) < self._next_request
        )

    def on_event(self, event: Event) -> list[Op]:
        request_id = event.request_id
        if not self._issued(request_id):
            raise ValueError(f"the searcher made no trial with request id {request_id!r}")
        if self._shutdown or request_id not in self._open:
            return []  # closed already: a late or repeated event
        if isinstance(event, TrialCreated):
            return self._record(self.method.trial_created(self, request_id))
        if isinstance(event, TrialProgress):
            self._open[request_id] = min(1.0, max(0.0, float(event.progress)))
            return []
        if isinstance(event, ValidationReported):
            # A trial told to pause or close may still report once on its way out; the
            # searcher has already decided about it.
            if request_id in self._closing or request_id in self._paused:
                return []
            return self._record(self.method.validation(self, request_id, event.metrics))
        if isinstance(event, TrialExitedEarly):
            if event.reason not in EXIT_REASONS:
                raise ValueError(
                    f"unknown exit reason {event.reason!r}; expected one of {EXIT_REASONS}"
                )
            if request_id in self._exited:
                return []
            self._exited[request_id] = None
            self._cancels += event.reason == "USER_CANCELED"
            self._failures += event.reason == "ERRORED"
            return self._record(self.method.exited_early(self, request_id, event.reason))
        if isinstance(event, TrialClosed):
            del self._open[request_id]
            self._closed += 1
            for held in (self._exited, self._paused, self._closing):
                held.pop(request_id, None)
            ops = self._record(self.method.trial_closed(self, request_id))
            if not self._open:
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
            "open": dict(self._open),
            "closed": self._closed,
            "exited": list(self._exited),
            "cancels": self._cancels,
            "failures": self._failures,
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
        self._open = {str(k): float(v) for k, v in snapshot["open"].items()}
        self._closed = int(snapshot["closed"])
        self._exited = dict.fromkeys(snapshot["exited"])
        self._cancels = int(snapshot["cancels"])
        self._failures = int(snapshot["failures"])
        self._paused = dict.fromkeys(snapshot["paused"])
        self._closing = dict.fromkeys(snapshot["closing"])
        self._shutdown = bool(snapshot["shutdown"])
        self._started = bool(snapshot["started"])

    # Helpers.
    def _record(self, ops: list[Op]) -> list[Op]:
        for op in ops:
            if isinstance(op, Stop):
                self._paused[op.request_id] = None
            elif isinstance(op, Promote):
                self._paused.pop(op.request_id, None)
            elif isinstance(op, Close):
                self._closing[op.request_id] = None
                self._paused.pop(op.request_id, None)
        return list(ops)

    def _shutdown_op(self) -> Shutdown:
        """Every requested trial is closed (Determined: TrialsRequested == len(TrialsClosed))."""
        self._shutdown = True
        total = self._next_request - 1
        return Shutdown(cancel=self._cancels >= total, failure=self._failures >= total)
