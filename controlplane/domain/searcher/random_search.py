"""single and random search (reference §4.3, Determined's random.go)."""

from __future__ import annotations

from typing import Any

from .base import Context
from .ops import Op
from .space import sample


class RandomSearch:
    """Keep up to `max_concurrent` trials going until `max_trials` were created.

    An InvalidHP early exit gives its trial back (it is replaced); other early exits count.
    """

    def __init__(self, space: dict[str, Any], max_trials: int, max_concurrent: int) -> None:
        self.space = space
        self.max_trials = max_trials
        self.max_concurrent = max_concurrent
        self.created = 0

    def initial(self, ctx: Context) -> list[Op]:
        count = self.max_trials
        if self.max_concurrent > 0:
            count = min(count, self.max_concurrent)
        return [self._create(ctx) for _ in range(count)]

    def _create(self, ctx: Context) -> Op:
        self.created += 1
        return ctx.create(sample(self.space, ctx.rng))

    def trial_created(self, ctx: Context, request_id: str) -> list[Op]:
        return []

    def validation(self, ctx: Context, request_id: str, metrics: dict[str, Any]) -> list[Op]:
        return []

    def exited_early(self, ctx: Context, request_id: str, reason: str) -> list[Op]:
        if reason == "INVALID_HP":
            self.created -= 1
        return []

    def trial_closed(self, ctx: Context, request_id: str) -> list[Op]:
        if self.created < self.max_trials:
            return [self._create(ctx)]
        return []

    def progress(self, ctx: Context) -> float:
        done = ctx.closed_count() + sum(ctx.open_progress().values())
        return done / self.max_trials

    def snapshot(self) -> dict[str, Any]:
        return {"created": self.created}

    def load(self, state: dict[str, Any]) -> None:
        self.created = int(state["created"])
