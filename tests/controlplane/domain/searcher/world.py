"""A make-believe cluster for searcher tests: it carries out operations and invents events.

Which trial reports what, exits early or ends on its own is chosen by a `choose(n) -> index`
callable (hypothesis draws, or a fixed script), so a run is replayable from its event list.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controlplane.domain.searcher import (
    Close,
    Create,
    Event,
    Op,
    Promote,
    Searcher,
    Shutdown,
    Stop,
    TrialClosed,
    TrialCreated,
    TrialExitedEarly,
    TrialProgress,
    ValidationReported,
)

REASONS = ("INVALID_HP", "ERRORED", "USER_CANCELED")


@dataclass
class World:
    searcher: Searcher
    time_metric: str = "batches"
    step: int = 1
    limit: int | None = None
    """Most trials allowed running at once (checked after every batch of operations)."""
    state: dict[str, str] = field(default_factory=dict)
    times: dict[str, int] = field(default_factory=dict)
    unacked: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    invalid: int = 0
    shutdown: Shutdown | None = None
    most_running: int = 0

    def apply(self, ops: list[Op]) -> None:
        for op in ops:
            assert self.shutdown is None, f"{op} after {self.shutdown}"
            self.ops.append(op)
            if isinstance(op, Create):
                assert op.request_id not in self.state, f"request id reused: {op}"
                assert 0 <= op.seed < 2**31
                json.dumps(op.hparams)
                self.state[op.request_id] = "running"
                self.times[op.request_id] = 0
                self.unacked.append(op.request_id)
            elif isinstance(op, Stop):
                assert self.state[op.request_id] == "running", op
                self.state[op.request_id] = "paused"
            elif isinstance(op, Promote):
                assert self.state[op.request_id] == "paused", op
                self.state[op.request_id] = "running"
            elif isinstance(op, Close):
                assert self.state[op.request_id] in ("running", "paused", "exiting"), op
                if self.state[op.request_id] != "exiting":
                    self.state[op.request_id] = "closing"
            elif isinstance(op, Shutdown):
                open_trials = [r for r, s in self.state.items() if s != "closed"]
                assert not open_trials, f"Shutdown with trials open: {open_trials}"
                self.shutdown = op
        assert 0.0 <= self.searcher.progress() <= 1.0
        running = sum(1 for s in self.state.values() if s == "running")
        self.most_running = max(self.most_running, running)
        if self.limit is not None:
            assert running <= self.limit, f"{running} trials running, limit {self.limit}"

    def send(self, event: Event) -> None:
        self.events.append(event)
        self.apply(self.searcher.on_event(event))

    def start(self) -> None:
        self.apply(self.searcher.initial_operations())

    def possible(self) -> list[tuple[str, str]]:
        moves: list[tuple[str, str]] = []
        for rid in self.unacked:
            moves.append(("ack", rid))
        for rid, state in self.state.items():
            if state == "running" and rid not in self.unacked:
                moves += [("report", rid), ("report", rid), ("report", rid), ("exit", rid)]
                moves += [("end", rid), ("progress", rid)]
            elif state in ("closing", "exiting"):
                moves.append(("close", rid))
        return moves

    def move(self, choose: Callable[[int], int], metric: Callable[[str], float]) -> bool:
        moves = self.possible()
        if not moves:
            return False
        kind, rid = moves[choose(len(moves))]
        if kind == "ack":
            self.unacked.remove(rid)
            self.send(TrialCreated(rid))
        elif kind == "report":
            self.times[rid] += self.step * (1 + choose(3))
            self.send(
                ValidationReported(rid, {"loss": metric(rid), self.time_metric: self.times[rid]})
            )
        elif kind == "progress":
            self.send(TrialProgress(rid, choose(11) / 10))
        elif kind == "exit":
            reason = REASONS[choose(len(REASONS))]
            self.invalid += reason == "INVALID_HP"
            self.state[rid] = "exiting"
            self.send(TrialExitedEarly(rid, reason))
        elif kind == "end":
            self.state[rid] = "closed"
            self.send(TrialClosed(rid))
        else:
            self.state[rid] = "closed"
            self.send(TrialClosed(rid))
        return True

    def creates(self) -> int:
        return sum(isinstance(op, Create) for op in self.ops)


def replay(searcher: Searcher, events: list[Event], initial: bool = True) -> list[Op]:
    ops: list[Op] = list(searcher.initial_operations()) if initial else []
    for event in events:
        ops.extend(searcher.on_event(event))
    return ops


def roundtrip(snapshot: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(snapshot, allow_nan=False))
