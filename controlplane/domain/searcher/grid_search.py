"""grid search (reference §4.4, Determined's grid.go)."""

from __future__ import annotations

from typing import Any

from .base import Context
from .ops import Op
from .space import Grid


class GridSearch:
    """One trial per grid point, popped from the end of the product; no point is retried."""

    def __init__(self, space: dict[str, Any], max_concurrent: int) -> None:
        self.grid = Grid(space)
        self.max_concurrent = max_concurrent
        self.remaining = self.grid.size

    def initial(self, ctx: Context) -> list[Op]:
        count = self.grid.size
        if self.max_concurrent > 0:
            count = min(count, self.max_concurrent)
        return [self._create(ctx) for _ in range(count)]

    def _create(self, ctx: Context) -> Op:
        self.remaining -= 1
        return ctx.create(self.grid.point(self.remaining))

    def trial_created(self, ctx: Context, request_id: str) -> list[Op]:
        return []

    def validation(self, ctx: Context, request_id: str, metrics: dict[str, Any]) -> list[Op]:
        return []

    def exited_early(self, ctx: Context, request_id: str, reason: str) -> list[Op]:
        return []

    def trial_closed(self, ctx: Context, request_id: str) -> list[Op]:
        return [self._create(ctx)] if self.remaining > 0 else []

    def progress(self, ctx: Context) -> float:
        done = ctx.closed_count() + sum(ctx.open_progress().values())
        return done / self.grid.size

    def snapshot(self) -> dict[str, Any]:
        return {"remaining": self.remaining}

    def load(self, state: dict[str, Any]) -> None:
        self.remaining = int(state["remaining"])
