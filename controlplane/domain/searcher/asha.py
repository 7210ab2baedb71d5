"""Asynchronous successive halving, one bracket (reference §4.5, Determined's asha_stopping.go).

Without promotions this is Determined 0.38: a trial that is not in the top 1/divisor of a rung
it reaches is closed (and thrown away), and every close makes room for a new trial.

With promotions (`searcher.promotions: true`) a loser is paused (`Stop`) with its checkpoint
instead, and a free slot first resumes (`Promote`) the best paused trial that is now in the top
1/divisor of its rung, from its checkpoint (ASHA as Li et al. describe it: promote when possible,
otherwise start a new trial). So the search goes deep as soon as a rung has shown who is good,
no compute is spent twice, and no slot idles while a paused trial has earned the next rung.
When nothing is running, nothing can be created and nothing is promotable, the paused trials
are closed and the bracket is done.

With promotions a trial is ranked at a rung by its best result so far, not by the report that
happened to reach the rung: the trial is worth its best checkpoint to the user (that is the one
kept and shown as the trial's searcher metric), and a noisy report at the rung boundary should
not pause a trial whose previous epoch was the best of the rung. Without promotions the rung
takes the report, as Determined's does.

New trials are random points unless a `RungModel` is given (`searcher.sampler: tpe`, the
default with promotions): then they come from TPE fitted on the rung results (BOHB-style),
pooled over the brackets of an adaptive search.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .base import Context
from .ops import Close, Create, Op, Promote, Stop
from .rungs import EXITED_METRIC, Rung, ladder, number, ranked_value, rung_units
from .space import sample

if TYPE_CHECKING:
    from .rung_model import Point, RungModel


class AshaSearch:
    def __init__(
        self,
        space: dict[str, Any],
        *,
        metric: str,
        smaller_is_better: bool,
        time_metric: str,
        max_time: int,
        num_rungs: int,
        divisor: float,
        max_trials: int,
        max_concurrent: int,
        promotions: bool,
        model: RungModel | None = None,
    ) -> None:
        self.space = space
        self.metric = metric
        self.smaller_is_better = smaller_is_better
        self.time_metric = time_metric
        self.divisor = divisor
        self.max_trials = max_trials
        self.promotions = promotions
        self.model = model
        self.points: dict[str, Point] = {}
        """Each trial's point for the model (kept while its rung results are)."""
        self.pool: list[AshaSearch] = [self]
        """The searches whose rung results the model learns from (all brackets of a tournament)."""
        self.rungs = [Rung(units) for units in rung_units(num_rungs, divisor, max_time)]
        if max_concurrent > 0:
            self.capacity = min(max_concurrent, max_trials)
        else:
            self.capacity = min(max(1, int(math.pow(divisor, num_rungs - 1))), max_trials)
        self.trial_rungs: dict[str, int] = {}
        self.running: dict[str, None] = {}
        self.paused: dict[str, int] = {}
        self.created = 0
        self.invalid = 0
        self.completed = 0
        self.best: dict[str, float] = {}
        """With promotions, each open trial's best ranked value so far."""

    # Creating.
    def _room(self) -> bool:
        return self.created - self.invalid < self.max_trials

    def _results(self) -> list[tuple[Point, float]]:
        """Every trial with a point and a rung result, scored for the model (`ladder`)."""
        reached: list[tuple[int, float, Point]] = []
        for search in self.pool:
            highest: dict[str, tuple[int, float]] = {}
            for rung in search.rungs:  # ascending: a higher rung overwrites a lower one
                for rid, value in rung.metrics:
                    if rid in search.points:
                        highest[rid] = (rung.units, value)
            reached.extend(
                (units, value, search.points[rid]) for rid, (units, value) in highest.items()
            )
        return ladder(reached)

    def _create(self, ctx: Context) -> Create:
        if self.model is None:
            op = ctx.create(sample(self.space, ctx.rng))
        else:
            hparams, point = self.model.propose(ctx.rng, self._results())
            op = ctx.create(hparams)
            self.points[op.request_id] = point
        self.created += 1
        self.trial_rungs[op.request_id] = 0
        self.running[op.request_id] = None
        return op

    def initial(self, ctx: Context) -> list[Op]:
        return [self._create(ctx) for _ in range(self.capacity)]

    def trial_created(self, ctx: Context, request_id: str) -> list[Op]:
        return []

    # Deciding.
    def _walk(self, request_id: str, time: float, value: float) -> str:
        """Place a report in the rungs it reaches: 'continue', 'top' or 'lost'."""
        for index in range(self.trial_rungs[request_id], len(self.rungs)):
            rung = self.rungs[index]
            self.trial_rungs[request_id] = index
            if time < rung.units:
                return "continue"
            rank = rung.insert(request_id, value)
            if index == len(self.rungs) - 1:
                return "top"
            if rank >= self._keep(rung):
                return "lost"
        return "continue"

    def validation(self, ctx: Context, request_id: str, metrics: dict[str, Any]) -> list[Op]:
        if request_id not in self.running:
            return []
        value = number(metrics, self.metric, "searcher metric")
        time = math.floor(number(metrics, self.time_metric, "time metric"))
        ranked = ranked_value(value, self.smaller_is_better)
        if self.promotions:
            ranked = min(ranked, self.best.get(request_id, ranked))
            self.best[request_id] = ranked
        outcome = self._walk(request_id, time, ranked)
        if outcome == "continue":
            return self._fill(ctx) if self.promotions else []
        del self.running[request_id]
        if self.promotions and outcome == "lost":
            self.paused[request_id] = self.trial_rungs[request_id]
            ops = self._fill(ctx)
            if Promote(request_id) in ops:  # the search's last trial: it simply goes on
                ops.remove(Promote(request_id))
                return ops
            return [Stop(request_id), *ops]
        ops: list[Op] = [Close(request_id)]
        if self.promotions:
            return ops + self._fill(ctx)
        if self._room():
            ops.append(self._create(ctx))
        return ops

    def exited_early(self, ctx: Context, request_id: str, reason: str) -> list[Op]:
        was_paused = self.paused.pop(request_id, None) is not None
        if request_id not in self.running:
            # Closed or paused by the searcher already: its place was given away then.
            return self._fill(ctx) if self.promotions and was_paused else []
        del self.running[request_id]
        if reason == "INVALID_HP":
            self.invalid += 1
            for rung in self.rungs[: self.trial_rungs[request_id] + 1]:
                rung.remove(request_id)
            self.points.pop(request_id, None)
            if self.promotions:
                return self._fill(ctx)
            return [self._create(ctx)]
        self.rungs[self.trial_rungs[request_id]].insert(request_id, EXITED_METRIC)
        if self.promotions:
            return self._fill(ctx)
        return [self._create(ctx)] if self._room() else []

    def trial_closed(self, ctx: Context, request_id: str) -> list[Op]:
        self.completed += 1
        self.paused.pop(request_id, None)
        self.best.pop(request_id, None)
        # Its rung entries stay (they rank later trials); where it stood is no longer needed.
        self.trial_rungs.pop(request_id, None)
        if request_id in self.running:
            # It ended on its own (its code trained less than max_time).
            del self.running[request_id]
            if self.promotions:
                return self._fill(ctx)
        return []

    # Promotions.
    def _keep(self, rung: Rung) -> int:
        """How many of a rung go on. Determined keeps at least one, as it closes the others for
        good; with promotions that made the first trial to reach each rung go on whatever its
        result (so the first trial created trained to max_time). A paused trial loses nothing
        by waiting, so with promotions a rung sends on only its top 1/divisor, as Li et al.'s
        ASHA does: none until it holds `divisor` results."""
        if self.promotions:
            return int(len(rung.metrics) / self.divisor)
        return rung.keep(self.divisor)

    def _promotable(self, *, last: bool = False) -> str | None:
        """The paused trial to resume: highest rung first, then best rank. `last`: nothing can
        reach the rungs any more, so Determined's at-least-one rule applies."""
        best: tuple[int, int, str] | None = None
        for request_id, index in self.paused.items():
            rung = self.rungs[index]
            rank = rung.rank(request_id)
            if rank < (rung.keep(self.divisor) if last else self._keep(rung)):
                key = (-index, rank, request_id)
                if best is None or key < best:
                    best = key
        return None if best is None else best[2]

    def _fill(self, ctx: Context) -> list[Op]:
        """Use free slots: promotions first, then new trials while max_trials allows.

        A paused trial that has earned the next rung has already paid for its lower rungs, so
        resuming it reaches the top rungs (where the target metric is) with the least compute;
        a new trial only gets a slot no such trial wants.
        """
        ops: list[Op] = []
        while len(self.running) < self.capacity:
            request_id = self._promotable()
            if request_id is not None:
                ops.append(self._promote(request_id))
            elif self._room():
                ops.append(self._create(ctx))
            else:
                break
        if not self.running and not self._room() and self.paused:
            # No result can come any more: a rung of fewer than `divisor` trials still sends its
            # best on (else a search of 2 trials with divisor 3 would stop at the first rung).
            request_id = self._promotable(last=True)
            if request_id is not None:
                ops.append(self._promote(request_id))
            else:
                ops.extend(Close(request_id) for request_id in self.paused)
                self.paused.clear()
        return ops

    def _promote(self, request_id: str) -> Promote:
        self.trial_rungs[request_id] = self.paused.pop(request_id) + 1
        self.running[request_id] = None
        return Promote(request_id)

    def progress(self, ctx: Context) -> float:
        entered = len(self.rungs[0].metrics)
        progress = entered / (1.2 * self.max_trials)
        if entered == self.max_trials:
            progress = max(progress, (self.completed - self.invalid) / self.max_trials)
        return progress

    def snapshot(self) -> dict[str, Any]:
        return {
            "rungs": [rung.snapshot() for rung in self.rungs],
            "trial_rungs": dict(self.trial_rungs),
            "running": list(self.running),
            "paused": [[rid, index] for rid, index in self.paused.items()],
            "created": self.created,
            "invalid": self.invalid,
            "completed": self.completed,
            "points": {rid: dict(point) for rid, point in self.points.items()},
            "best": dict(self.best),
        }

    def load(self, state: dict[str, Any]) -> None:
        self.rungs = [Rung.from_snapshot(rung) for rung in state["rungs"]]
        self.trial_rungs = {str(k): int(v) for k, v in state["trial_rungs"].items()}
        self.running = dict.fromkeys(state["running"])
        self.paused = {str(rid): int(index) for rid, index in state["paused"]}
        self.created = int(state["created"])
        self.invalid = int(state["invalid"])
        self.completed = int(state["completed"])
        # Snapshots from before the model existed have no points: those trials stay out of it.
        self.points = {str(rid): dict(point) for rid, point in state.get("points", {}).items()}
        # Snapshots from before best-so-far ranking: those trials start from their next report.
        self.best = {str(rid): float(v) for rid, v in state.get("best", {}).items()}
