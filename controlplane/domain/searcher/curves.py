"""Promotions decided by learning curves: which trial gets the next slot (`promotion_rule: curve`).

ASHA with promotions decides at fixed rungs: a trial that reaches a rung waits, paused, until
`divisor` trials have a result there, and only the top 1/divisor go on. On the benchmark task
(benchmarks/search_efficiency.py) most of that search's compute went to trials waiting at the
last rung but one for two rivals to catch up, while the trial that would reach the target was
already the best of the search.

This rule instead scores every open trial, after each of its reports, by what it is expected to
reach at max_time: its best result so far plus the upper quartile of the improvements that the
search's other trials made after the same amount of time (their best result after that time
against their result at it). A slot goes to the best-scored trial, running or paused, if its
score is among the best `1 - quantile` of all the search's trials' expected results; otherwise
to a new trial while max_trials allows. So a trial that is clearly ahead never waits, a trial
that stalls gives its slot away at its next report, and a paused one comes back as soon as the
others have fallen behind it. Once max_trials are made, a trial whose score misses that bar
is closed.

Values are ranked (smaller is better, `rungs.ranked_value`), so an improvement is a decrease.
The state is each open or finished trial's reports (time, ranked value), kept in the snapshot:
the search is exactly restorable, and it grows with max_trials times the reports per trial
(docs/searchers.md).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .base import Context
from .ops import Close, Create, Op, Promote, Stop
from .rungs import number, ranked_value
from .space import sample

if TYPE_CHECKING:
    from .rung_model import Point, RungModel

QUANTILE = 0.9
"""A trial keeps or gets a slot while its expected result is in the best 10 % of the search's."""

MIN_RESULTS = 4
"""Until this many trials have a result, every free slot starts a new trial."""

UNKNOWN_GAIN = 0.0
"""The improvement expected after a time no other trial has trained past: none (the trial is
the search's furthest, so it is scored by what it has shown)."""

GAIN_QUANTILE = 0.75
"""Which improvement of the others a trial is credited with: their upper quartile. Optimistic,
so that a trial is not paused for an average future (the median cost the benchmark's highest
target a third more compute on seeds 11-30, for no gain at the others)."""

Curve = list[tuple[float, float]]


class CurveSearch:
    def __init__(
        self,
        space: dict[str, Any],
        *,
        metric: str,
        smaller_is_better: bool,
        time_metric: str,
        max_time: int,
        max_trials: int,
        max_concurrent: int,
        model: RungModel | None = None,
        quantile: float = QUANTILE,
    ) -> None:
        self.space = space
        self.metric = metric
        self.smaller_is_better = smaller_is_better
        self.time_metric = time_metric
        self.max_time = max_time
        self.max_trials = max_trials
        self.capacity = min(max_concurrent, max_trials) if max_concurrent > 0 else max_trials
        self.model = model
        self.quantile = quantile
        self.curves: dict[str, Curve] = {}
        """Every trial's reports (time, ranked value), in the order they came."""
        self.running: dict[str, None] = {}
        self.paused: dict[str, None] = {}
        self.done: dict[str, None] = {}
        """Trials that can train no more (max_time reached, exited, closed): still scored."""
        self.points: dict[str, Point] = {}
        self.created = 0
        self.invalid = 0
        self._gains: dict[float, float] = {}
        """`_gain` per time, until the next report changes the curves."""

    # Scoring.
    def _gain(self, time: float) -> float:
        """The GAIN_QUANTILE improvement of the trials that trained past `time` (never
        negative); the trial being scored is not among them, as its last report is at `time`."""
        if time in self._gains:
            return self._gains[time]
        gains = []
        for curve in self.curves.values():
            if not curve or curve[-1][0] <= time:
                continue
            at = [value for t, value in curve if t <= time]
            if at:
                gains.append(max(0.0, at[-1] - min(value for t, value in curve if t > time)))
        gains.sort()
        gain = gains[int(GAIN_QUANTILE * (len(gains) - 1))] if len(gains) >= 2 else UNKNOWN_GAIN
        self._gains[time] = gain
        return gain

    def _score(self, request_id: str) -> float:
        """What the trial is expected to reach at max_time (ranked: smaller is better)."""
        curve = self.curves[request_id]
        best = min(value for _, value in curve)
        if request_id in self.done:
            return best
        return best - self._gain(curve[-1][0])

    def _bar(self) -> float | None:
        """The score a trial needs to deserve a slot, or None while too few have results."""
        scores = sorted(self._score(rid) for rid, curve in self.curves.items() if curve)
        if len(scores) < MIN_RESULTS:
            return None
        return scores[math.floor((1 - self.quantile) * (len(scores) - 1))]

    def _deserves(self, score: float) -> bool:
        """Whether a trial with this score should train on. While too few trials have a result
        to judge by, new trials come first; once none can come, every open trial deserves."""
        bar = self._bar()
        return not self._room() if bar is None else score <= bar

    def _room(self) -> bool:
        return self.created - self.invalid < self.max_trials

    # Creating.
    def _ranked(self) -> list[tuple[Point, float]]:
        """Every trial with a result and a point, as (point, place by score) for the model."""
        scored = sorted(
            (self._score(rid), rid)
            for rid, curve in self.curves.items()
            if curve and rid in self.points
        )
        return [(self.points[rid], float(place)) for place, (_, rid) in enumerate(scored)]

    def _create(self, ctx: Context) -> Create:
        if self.model is None:
            op = ctx.create(sample(self.space, ctx.rng))
        else:
            hparams, point = self.model.propose(ctx.rng, self._ranked())
            op = ctx.create(hparams)
            self.points[op.request_id] = point
        self.created += 1
        self.curves[op.request_id] = []
        self.running[op.request_id] = None
        return op

    def initial(self, ctx: Context) -> list[Op]:
        return [self._create(ctx) for _ in range(self.capacity)]

    def trial_created(self, ctx: Context, request_id: str) -> list[Op]:
        return []

    # Deciding.
    def _best_paused(self) -> tuple[float, str] | None:
        return min(((self._score(rid), rid) for rid in self.paused), default=None)

    def validation(self, ctx: Context, request_id: str, metrics: dict[str, Any]) -> list[Op]:
        if request_id not in self.running:
            return []
        value = ranked_value(
            number(metrics, self.metric, "searcher metric"), self.smaller_is_better
        )
        time = number(metrics, self.time_metric, "time metric")
        self.curves[request_id].append((time, value))
        self._gains.clear()
        del self.running[request_id]
        if math.floor(time) >= self.max_time:
            self.done[request_id] = None
            return [Close(request_id), *self._fill(ctx)]
        own = self._score(request_id)
        rival = self._best_paused()
        deserves = self._deserves(own)
        if deserves and (rival is None or own <= rival[0]):
            self.running[request_id] = None
            return []
        if not deserves and not self._room():
            # Nothing new can come, and it is not among the best: the search is done with it.
            self.done[request_id] = None
            return [Close(request_id), *self._fill(ctx)]
        self.paused[request_id] = None
        ops = self._fill(ctx)
        if Promote(request_id) in ops:  # still the best use of its slot: it simply goes on
            ops.remove(Promote(request_id))
            return ops
        return [Stop(request_id), *ops]

    def _fill(self, ctx: Context) -> list[Op]:
        """Free slots go to the best paused trial if it deserves one, else to a new trial."""
        ops: list[Op] = []
        while len(self.running) < self.capacity:
            rival = self._best_paused()
            if rival is not None and self._deserves(rival[0]):
                ops.append(self._promote(rival[1]))
            elif self._room():
                ops.append(self._create(ctx))
            else:
                break
        if not self.running and not self._room() and self.paused:
            # None of them deserves to train on and no result can change that any more.
            ops.extend(Close(request_id) for request_id in self.paused)
            self.done.update(dict.fromkeys(self.paused))
            self.paused.clear()
        return ops

    def _promote(self, request_id: str) -> Promote:
        del self.paused[request_id]
        self.running[request_id] = None
        return Promote(request_id)

    def exited_early(self, ctx: Context, request_id: str, reason: str) -> list[Op]:
        was_paused = self.paused.pop(request_id, None) is not None
        if request_id not in self.running:
            return self._fill(ctx) if was_paused else []
        del self.running[request_id]
        if reason == "INVALID_HP":
            self.invalid += 1
            self.curves.pop(request_id, None)
            self._gains.clear()
            self.points.pop(request_id, None)
        else:
            self.done[request_id] = None
        return self._fill(ctx)

    def trial_closed(self, ctx: Context, request_id: str) -> list[Op]:
        self.paused.pop(request_id, None)
        if request_id in self.curves:
            self.done[request_id] = None
        if request_id in self.running:
            del self.running[request_id]  # it ended on its own, before max_time
            return self._fill(ctx)
        return []

    def progress(self, ctx: Context) -> float:
        return min(len(self.done), self.max_trials) / self.max_trials

    def snapshot(self) -> dict[str, Any]:
        return {
            "curves": {rid: [list(r) for r in curve] for rid, curve in self.curves.items()},
            "running": list(self.running),
            "paused": list(self.paused),
            "done": list(self.done),
            "points": {rid: dict(point) for rid, point in self.points.items()},
            "created": self.created,
            "invalid": self.invalid,
        }

    def load(self, state: dict[str, Any]) -> None:
        self.curves = {
            str(rid): [(float(t), float(v)) for t, v in curve]
            for rid, curve in state["curves"].items()
        }
        self.running = dict.fromkeys(state["running"])
        self.paused = dict.fromkeys(state["paused"])
        self.done = dict.fromkeys(state["done"])
        self.points = {str(rid): dict(point) for rid, point in state["points"].items()}
        self.created = int(state["created"])
        self.invalid = int(state["invalid"])
        self._gains.clear()
