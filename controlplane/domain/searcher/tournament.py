"""Several searches side by side (Determined's tournament.go): each event goes to the search
that created the trial. Adaptive ASHA is a tournament of ASHA brackets."""

from __future__ import annotations

from typing import Any

from .asha import AshaSearch
from .base import Context
from .ops import Create, Op


class Tournament:
    def __init__(self, searches: list[AshaSearch]) -> None:
        self.searches = searches
        for search in searches:
            # BOHB pools the rung results of all brackets into one model.
            search.pool = searches
        self.owner: dict[str, int] = {}

    def _mark(self, index: int, ops: list[Op]) -> list[Op]:
        for op in ops:
            if isinstance(op, Create):
                self.owner[op.request_id] = index
        return ops

    def initial(self, ctx: Context) -> list[Op]:
        ops: list[Op] = []
        for index, search in enumerate(self.searches):
            ops.extend(self._mark(index, search.initial(ctx)))
        return ops

    def trial_created(self, ctx: Context, request_id: str) -> list[Op]:
        index = self.owner[request_id]
        return self._mark(index, self.searches[index].trial_created(ctx, request_id))

    def validation(self, ctx: Context, request_id: str, metrics: dict[str, Any]) -> list[Op]:
        index = self.owner[request_id]
        return self._mark(index, self.searches[index].validation(ctx, request_id, metrics))

    def exited_early(self, ctx: Context, request_id: str, reason: str) -> list[Op]:
        index = self.owner[request_id]
        return self._mark(index, self.searches[index].exited_early(ctx, request_id, reason))

    def trial_closed(self, ctx: Context, request_id: str) -> list[Op]:
        index = self.owner.pop(request_id)  # no event comes for a closed trial
        return self._mark(index, self.searches[index].trial_closed(ctx, request_id))

    def progress(self, ctx: Context) -> float:
        return sum(search.progress(ctx) for search in self.searches) / len(self.searches)

    def snapshot(self) -> dict[str, Any]:
        return {
            "owner": dict(self.owner),
            "searches": [search.snapshot() for search in self.searches],
        }

    def load(self, state: dict[str, Any]) -> None:
        self.owner = {str(k): int(v) for k, v in state["owner"].items()}
        for search, sub in zip(self.searches, state["searches"], strict=True):
            search.load(sub)
