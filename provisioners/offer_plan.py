"""The launch plan: which offer to launch how many of, ranked, with failover order (pure).

`plan_offers(OfferSnapshot) -> LaunchPlan`. In: the pool's offers, the demand the scale decider
left (instances of the pool's unit size, the largest waiting request, the room under
max_instances), the cold marks, the hourly cost of what runs, the settings and `now`. Out: the
choices in the order to try them, why an offer was left out, and why work waits.

Rules, in this order:
- an on-demand fallback offer of a spot pool is eligible only once work has waited
  `on_demand_after` (never when that is unset);
- a cold offer is left out until its backoff passes;
- an offer must fit the largest request: it holds it on one instance, or the request is a whole
  number of its instances (a gang); a gang's instances all go to the offer's one location;
- the count covers the demand's slots, within the room under max_instances, and the plan never
  goes past `max_hourly_cost` (running cost + this launch); a cap never cuts a gang's launch
  short (it is launched whole or not at all);
- the choices that cover the most of the demand come first, then the cheapest per hour, then the
  cheapest per slot, then the config's order.

With one offer, no budget and nothing cold, the plan is that offer x the decider's count:
exactly what the pool launched before offers existed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from provisioners.offers import Offer, OfferSettings, OfferState

_EPSILON = 1e-9  # prices are floats; a launch exactly at the budget is within it


@dataclass(frozen=True)
class OfferDemand:
    """What the decider asks for, in the units of the pool's first (unit) offer.

    `instances` x `unit_slots` is the number of slots to add; `largest_request` is the biggest
    waiting request's slots (0: none, e.g. min_instances); `max_new_instances` the room left
    under max_instances.
    """

    instances: int
    unit_slots: int
    largest_request: int = 0
    max_new_instances: int | None = None


@dataclass(frozen=True)
class OfferSnapshot:
    now: datetime
    offers: Sequence[Offer]
    demand: OfferDemand
    state: OfferState = field(default_factory=OfferState)
    settings: OfferSettings = field(default_factory=OfferSettings)
    running_cost: float = 0.0


@dataclass(frozen=True)
class LaunchChoice:
    """Launch `count` instances of `offer` (all in its one location)."""

    offer: Offer
    count: int
    covers_slots: int

    @property
    def hourly_cost(self) -> float:
        return self.count * self.offer.price_per_hour


@dataclass(frozen=True)
class LaunchPlan:
    """Choices in the order to try them; `left_out` says why each other offer is not one;
    `waiting` (set when the plan cannot cover the demand) is shown on the waiting work."""

    choices: tuple[LaunchChoice, ...]
    left_out: tuple[tuple[str, str], ...]
    waiting: str | None
    state: OfferState

    @property
    def first(self) -> LaunchChoice | None:
        return self.choices[0] if self.choices else None


def plan_offers(snapshot: OfferSnapshot) -> LaunchPlan:
    """Rank the offers for the demand; see the module docstring for the rules."""
    demand, state, now = snapshot.demand, snapshot.state, snapshot.now
    if demand.instances <= 0:
        return LaunchPlan((), (), None, replace(state, unmet_since=None))
    state = replace(state, unmet_since=state.unmet_since or now)
    choices: list[LaunchChoice] = []
    left_out: list[tuple[str, str]] = []
    for offer in snapshot.offers:
        choice, why = _choice(offer, snapshot, state)
        if choice is None:
            left_out.append((offer.key, why))
        else:
            choices.append(choice)
    wanted = _slots_wanted(demand)
    choices.sort(
        key=lambda c: (-min(c.covers_slots, wanted), c.hourly_cost, _per_slot(c), c.offer.rank)
    )
    waiting = None
    if not choices or choices[0].covers_slots < wanted:
        waiting = _waiting_reason(snapshot, choices, left_out)
    return LaunchPlan(tuple(choices), tuple(left_out), waiting, state)


def _slots_wanted(demand: OfferDemand) -> int:
    return demand.instances * max(demand.unit_slots, 0)


def _per_slot(choice: LaunchChoice) -> float:
    return choice.offer.price_per_hour / max(choice.offer.slots, 1)


def _choice(
    offer: Offer, snapshot: OfferSnapshot, state: OfferState
) -> tuple[LaunchChoice | None, str]:
    demand, settings, now = snapshot.demand, snapshot.settings, snapshot.now
    if offer.fallback:
        after = settings.on_demand_after
        if after is None:
            return None, "on-demand fallback is off (spot_fallback_after unset)"
        since = state.unmet_since or now
        if now - since < after:
            return None, f"on-demand only after work waited {after} (since {since.isoformat()})"
    cold_until = state.cold_until(offer.key, now)
    if cold_until is not None:
        mark = state.cold[offer.key]
        return (
            None,
            f"cold until {cold_until.isoformat()} after {mark.failures} error(s): {mark.reason}",
        )
    request = demand.largest_request
    gang = 0
    if offer.slots > 0 and request > offer.slots:
        if request % offer.slots:
            return (
                None,
                f"a request of {request} slots is not a whole number of its "
                f"{offer.slots}-slot instances",
            )
        gang = request // offer.slots
    wanted = _count_for(offer, demand)
    count = wanted
    if demand.max_new_instances is not None:
        count = min(count, max(demand.max_new_instances, 0))
    # The gang's instances this launch must bring (fewer when some are already starting and the
    # decider asks only for the rest); a cap that cuts below that would strand a partial gang.
    whole = min(gang, wanted) if gang else 0
    if whole and count < whole:
        return (
            None,
            f"a gang of {whole} instances does not fit the {count} left under max_instances",
        )
    budget = settings.max_hourly_cost
    if budget is not None and offer.price_per_hour > 0:
        room = budget - snapshot.running_cost
        affordable = max(0, math.floor(room / offer.price_per_hour + _EPSILON))
        if affordable < max(whole, 1):
            need = max(whole, 1) * offer.price_per_hour
            return None, (
                f"over max_hourly_cost ${budget:g}/h: ${snapshot.running_cost:.2f}/h runs, "
                f"{max(whole, 1)} more cost ${need:.2f}/h"
            )
        count = min(count, affordable)
    if count <= 0:
        return None, "no room under max_instances"
    covers = count * offer.slots if demand.unit_slots > 0 else count
    return LaunchChoice(offer, count, covers), ""


def _count_for(offer: Offer, demand: OfferDemand) -> int:
    """Instances of `offer` that hold the demand's slots (slotless pools: the decider's count)."""
    if demand.unit_slots <= 0 or offer.slots <= 0:
        return demand.instances
    return math.ceil(demand.instances * demand.unit_slots / offer.slots)


def _waiting_reason(
    snapshot: OfferSnapshot, choices: Sequence[LaunchChoice], left_out: Sequence[tuple[str, str]]
) -> str:
    wanted = _slots_wanted(snapshot.demand)
    parts = [f"{key}: {why}" for key, why in left_out]
    if choices:
        best = choices[0]
        head = f"only {best.covers_slots} of {wanted} slots can be launched now"
    else:
        head = f"no offer can launch {wanted} slot(s) now"
    budget = snapshot.settings.max_hourly_cost
    if budget is not None:
        head += f" (max_hourly_cost ${budget:g}/h, ${snapshot.running_cost:.2f}/h running)"
    return f"{head}; " + "; ".join(parts) if parts else head
