"""What work cost: each machine's hourly price over its life, shared among the allocations on it.

A provisioned instance is priced by the offer it was launched from (the pool's price, else the
repository's price table) and lives from its launch to its termination. An allocation holds
some of the instance's slots for some time; its share of the instance is

    slots held x seconds held (within the instance's life) x price per hour / slots of the instance

so an instance whose every slot is busy for its whole life is paid exactly once by the work on it,
and idle time is paid by nobody (it shows as the pool's idle cost, instance cost minus shares).
Slots on agents with no known price (static agents, a type missing from the price table) count
as `unpriced` slot-seconds, so a total never looks complete when it is not.

Everything here is pure: `now` stands in for the end of whatever has not ended yet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class InstanceLife:
    """One machine a provisioner launched: the agent it ran, its price, its slots, its life."""

    agent: str
    pool: str
    start: datetime
    end: datetime | None  # None: still running
    price_per_hour: float
    slots: int
    instance_id: str = ""
    instance_type: str = ""
    spot: bool = False

    @property
    def priced(self) -> bool:
        return self.price_per_hour > 0 and self.slots > 0

    @property
    def price_per_slot_hour(self) -> float:
        return self.price_per_hour / self.slots if self.priced else 0.0


@dataclass(frozen=True)
class AllocationUse:
    """One allocation and what it is charged to: where it ran (agent -> slots held there), when,
    and the trial, experiment, user, workspace, pool and labels its cost sums into."""

    allocation_id: str
    start: datetime
    end: datetime | None  # None: still running
    placement: Mapping[str, int]
    pool: str = ""
    task_id: str = ""
    task_type: str = ""
    trial_id: int | None = None
    experiment_id: int | None = None
    username: str = ""
    workspace: str = ""
    labels: tuple[str, ...] = ()
    user_id: int | None = None

    @property
    def slots(self) -> int:
        return sum(n for n in self.placement.values() if n > 0)


@dataclass(frozen=True)
class Share:
    """Slot-seconds used, how many of them ran on priced machines, and their cost in USD."""

    slot_seconds: float = 0.0
    priced_slot_seconds: float = 0.0
    cost: float = 0.0

    def __add__(self, other: Share) -> Share:
        return Share(
            self.slot_seconds + other.slot_seconds,
            self.priced_slot_seconds + other.priced_slot_seconds,
            self.cost + other.cost,
        )

    @property
    def unpriced_slot_seconds(self) -> float:
        return max(0.0, self.slot_seconds - self.priced_slot_seconds)

    @property
    def slot_hours(self) -> float:
        return self.slot_seconds / SECONDS_PER_HOUR


ZERO = Share()


def overlap_seconds(
    start_a: datetime, end_a: datetime, start_b: datetime, end_b: datetime
) -> float:
    """Seconds the intervals [start_a, end_a) and [start_b, end_b) share (0 when disjoint)."""
    seconds = (min(end_a, end_b) - max(start_a, start_b)).total_seconds()
    return seconds if seconds > 0 else 0.0


def lives_by_agent(lives: Iterable[InstanceLife]) -> dict[str, list[InstanceLife]]:
    out: dict[str, list[InstanceLife]] = defaultdict(list)
    for life in lives:
        out[life.agent].append(life)
    return dict(out)


def allocation_share(
    use: AllocationUse,
    lives: Mapping[str, Sequence[InstanceLife]],
    now: datetime,
    window: tuple[datetime, datetime] | None = None,
) -> Share:
    """The allocation's share of the machines it ran on, within `window` when one is given."""
    start, end = use.start, use.end or now
    if window is not None:
        start, end = max(start, window[0]), min(end, window[1])
    if end <= start:
        return ZERO
    held = (end - start).total_seconds()
    slot_seconds = priced = cost = 0.0
    for agent, slots in sorted(use.placement.items()):
        if slots <= 0:
            continue  # auxiliary work holds no slot and is charged nothing
        slot_seconds += slots * held
        for life in lives.get(agent, ()):
            if not life.priced:
                continue
            covered = overlap_seconds(start, end, life.start, life.end or now)
            priced += slots * covered
            cost += slots * covered / SECONDS_PER_HOUR * life.price_per_slot_hour
    return Share(slot_seconds, min(priced, slot_seconds), cost)


def instance_cost(
    life: InstanceLife, now: datetime, window: tuple[datetime, datetime] | None = None
) -> Share:
    """What the machine itself cost (busy or idle), within `window` when one is given."""
    start, end = life.start, life.end or now
    if window is not None:
        start, end = max(start, window[0]), min(end, window[1])
    seconds = max(0.0, (end - start).total_seconds())
    slot_seconds = seconds * max(life.slots, 0)
    if not life.priced:
        return Share(slot_seconds, 0.0, 0.0)
    return Share(slot_seconds, slot_seconds, seconds / SECONDS_PER_HOUR * life.price_per_hour)


KeyOf = Callable[[AllocationUse], Iterable[str]]


def by_trial(use: AllocationUse) -> Iterable[str]:
    return (str(use.trial_id),) if use.trial_id is not None else ()


def by_experiment(use: AllocationUse) -> Iterable[str]:
    return (str(use.experiment_id),) if use.experiment_id is not None else ()


def by_user(use: AllocationUse) -> Iterable[str]:
    return (use.username,) if use.username else ()


def by_workspace(use: AllocationUse) -> Iterable[str]:
    return (use.workspace,) if use.workspace else ()


def by_pool(use: AllocationUse) -> Iterable[str]:
    return (use.pool,) if use.pool else ()


def by_label(use: AllocationUse) -> Iterable[str]:
    """An experiment's labels, each once (Determined's byExperimentLabel: an allocation of an
    experiment with two labels counts under both)."""
    return dict.fromkeys(use.labels)


GROUPINGS: dict[str, KeyOf] = {
    "trial": by_trial,
    "experiment": by_experiment,
    "user": by_user,
    "workspace": by_workspace,
    "pool": by_pool,
    "label": by_label,
}


def sum_shares(shares: Iterable[Share]) -> Share:
    total = ZERO
    for share in shares:
        total = total + share
    return total


def totals_by(pairs: Iterable[tuple[AllocationUse, Share]], key: KeyOf) -> dict[str, Share]:
    """Shares summed per key; an allocation without a key (a command has no trial) is left out,
    one with several keys (labels) counts under each."""
    out: dict[str, Share] = {}
    for use, share in pairs:
        for k in key(use):
            out[k] = out.get(k, ZERO) + share
    return dict(sorted(out.items()))


def shares_of(
    uses: Iterable[AllocationUse],
    lives: Iterable[InstanceLife],
    now: datetime,
    window: tuple[datetime, datetime] | None = None,
) -> list[tuple[AllocationUse, Share]]:
    """Each allocation with its share, within `window` when one is given."""
    by_agent = lives_by_agent(lives)
    return [(use, allocation_share(use, by_agent, now, window)) for use in uses]
