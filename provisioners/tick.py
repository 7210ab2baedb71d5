"""One provisioner tick, planned: the scale decider and the sticky launch error together.

The master's loop, per pool and per tick (reference §2.1):

1. list the cloud's instances (in a thread, no DB transaction open);
2. `plan_tick(TickSnapshot(...))`: pure; the plan says what to terminate (with reasons), how many
   to launch (0 while the launch error is visible), which pending requests to reject, and
   human-readable `Decision`s for `det resource-pool describe`;
3. store `plan.state` and the decisions; terminate, then launch with a request id stored first;
4. `record_launch(...)` with the launch's outcome gives the state for the next tick.

`TickState` is all the loop must keep between ticks; it round-trips through JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from provisioners.base import Instance, LaunchFailure, OfferLaunchResult
from provisioners.launch_errors import (
    LaunchError,
    LaunchErrorSettings,
    LaunchErrorState,
    record_failure,
    record_success,
    state_from_json,
    state_to_json,
    unschedulable_requests,
    visible_error,
)
from provisioners.offer_plan import LaunchPlan, OfferDemand, OfferSnapshot, plan_offers
from provisioners.offers import (
    COLD_KINDS,
    Offer,
    OfferSettings,
    OfferState,
    offer_state_from_json,
    offer_state_to_json,
    record_capacity_error,
    record_offer_success,
)
from provisioners.scale_decider import (
    DeciderMemory,
    DeciderSettings,
    ScalingPlan,
    ScalingSnapshot,
    Termination,
    TerminationReason,
    decide_scaling,
    memory_from_json,
    memory_to_json,
    remember_launch,
)


@dataclass(frozen=True)
class ProvisioningSettings:
    """A pool's provisioning knobs: decider limits and periods, launch-error settings."""

    decider: DeciderSettings = field(default_factory=DeciderSettings)
    launch_errors: LaunchErrorSettings = field(default_factory=LaunchErrorSettings)
    slots_per_instance: int = 0
    offers: tuple[Offer, ...] = ()  # empty: the provider launches its one type, no ranking
    offer_settings: OfferSettings = field(default_factory=OfferSettings)


@dataclass(frozen=True)
class TickState:
    """What one tick leaves for the next: decider timers and the launch-failure streak."""

    decider: DeciderMemory = field(default_factory=DeciderMemory)
    launch_errors: LaunchErrorState = field(default_factory=LaunchErrorState)
    offers: OfferState = field(default_factory=OfferState)

    def to_json(self) -> dict[str, Any]:
        return {
            "decider": memory_to_json(self.decider),
            "launch_errors": state_to_json(self.launch_errors),
            "offers": offer_state_to_json(self.offers),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TickState:
        return cls(
            decider=memory_from_json(data.get("decider", {})),
            launch_errors=state_from_json(data.get("launch_errors", {})),
            offers=offer_state_from_json(data.get("offers", {})),
        )


@dataclass(frozen=True)
class TickSnapshot:
    """The input of one tick.

    `agents` maps connected agent names to whether they are idle; `pending_slots` maps each
    unscheduled request of the pool to its slot count (only used to prune while launches fail).
    """

    now: datetime
    instances: Sequence[Instance]
    agents: Mapping[str, bool]
    desired_new_instances: int
    settings: ProvisioningSettings = field(default_factory=ProvisioningSettings)
    state: TickState = field(default_factory=TickState)
    pending_slots: Mapping[str, int] = field(default_factory=dict[str, int])


class DecisionKind(StrEnum):
    TERMINATE = "terminate"
    LAUNCH = "launch"
    LAUNCH_SKIPPED = "launch_skipped"  # the sticky launch error is visible
    AT_MAXIMUM = "at_maximum"  # demand the pool's max_instances leaves unmet
    PRUNE = "prune"  # requests rejected while launches fail
    INSTANCE_PROBLEM = "instance_problem"  # the cloud reports a problem on a listed instance
    LAUNCHED = "launched"
    LAUNCH_FAILED = "launch_failed"
    OFFER_COLD = "offer_cold"  # an offer answered a capacity error: the next one is tried
    WAITING_FOR_OFFER = "waiting_for_offer"  # no offer can take the work now (cold, budget)


@dataclass(frozen=True)
class Decision:
    """One thing the provisioner did or chose not to do, and why."""

    at: datetime
    kind: DecisionKind
    reason: str
    instance_ids: tuple[str, ...] = ()
    count: int = 0
    request_ids: tuple[str, ...] = ()

    @property
    def message(self) -> str:
        ids = self.instance_ids or self.request_ids
        suffix = f": {', '.join(ids)}" if ids else ""
        return f"{self.kind.value} {self.count}: {self.reason}{suffix}"


@dataclass(frozen=True)
class TickPlan:
    """What the loop does this tick; `state` replaces the stored state before any cloud call."""

    terminate: tuple[Termination, ...]
    launch: int
    launch_error: LaunchError | None
    prune: tuple[str, ...]
    decisions: tuple[Decision, ...]
    scaling: ScalingPlan
    state: TickState
    launch_plan: LaunchPlan | None = None  # the ranked offers, for a pool with offers

    @property
    def terminate_ids(self) -> list[str]:
        return [t.instance_id for t in self.terminate]


def plan_tick(snapshot: TickSnapshot) -> TickPlan:
    """Decide this tick: terminations, launch count (0 while the error shows), pruning, reasons."""
    settings, now = snapshot.settings, snapshot.now
    scaling = decide_scaling(
        ScalingSnapshot(
            now=now,
            instances=snapshot.instances,
            agents=snapshot.agents,
            desired_new_instances=snapshot.desired_new_instances,
            settings=settings.decider,
            memory=snapshot.state.decider,
        )
    )
    error = visible_error(snapshot.state.launch_errors, settings.launch_errors, now)
    prune: tuple[str, ...] = ()
    if error is not None:
        prune = unschedulable_requests(
            snapshot.pending_slots,
            listed_instances=len(snapshot.instances),
            slots_per_instance=settings.slots_per_instance,
        )
    decisions = [
        *_problem_decisions(snapshot.instances, now),
        *_termination_decisions(scaling.terminate, now),
        *_launch_decisions(snapshot, scaling, error),
    ]
    if prune:
        capacity = len(snapshot.instances) * settings.slots_per_instance
        reason = (
            f"need more than the {capacity} slots of the {len(snapshot.instances)} listed "
            f"instances while launches fail ({error.message if error else ''})"
        )
        decisions.append(Decision(now, DecisionKind.PRUNE, reason, (), len(prune), prune))
    launch = 0 if error is not None else scaling.launch
    offer_state = snapshot.state.offers
    launch_plan = None
    if settings.offers:
        launch_plan = plan_launch(snapshot, scaling, offer_state, launch=launch)
        offer_state = launch_plan.state
        if launch_plan.waiting is not None:
            decisions.append(
                Decision(now, DecisionKind.WAITING_FOR_OFFER, launch_plan.waiting, (), launch)
            )
    return TickPlan(
        terminate=scaling.terminate,
        launch=launch,
        launch_error=error,
        prune=prune,
        decisions=tuple(decisions),
        scaling=scaling,
        state=TickState(
            decider=scaling.memory, launch_errors=snapshot.state.launch_errors, offers=offer_state
        ),
        launch_plan=launch_plan,
    )


def plan_launch(
    snapshot: TickSnapshot, scaling: ScalingPlan, offer_state: OfferState, *, launch: int
) -> LaunchPlan:
    """The ranked offers for this tick's `launch` (in unit instances); called again with the
    offer state a failed attempt left, it gives the next offers to try in the same tick."""
    settings = snapshot.settings
    unit = settings.slots_per_instance
    countable = [s for s in snapshot.pending_slots.values() if is_countable_slots(s, unit)]
    counted = scaling.classes.counted
    return plan_offers(
        OfferSnapshot(
            now=snapshot.now,
            offers=settings.offers,
            demand=OfferDemand(
                instances=launch,
                unit_slots=unit,
                largest_request=max(countable, default=0),
                max_new_instances=max(0, settings.decider.max_instances - len(counted)),
            ),
            state=offer_state,
            settings=settings.offer_settings,
            running_cost=running_cost(snapshot.instances, counted, settings.offers),
        )
    )


def is_countable_slots(slots: int, slots_per_instance: int) -> bool:
    """resource_pools.scaling.is_countable for a bare slot count."""
    if slots <= 0 or slots_per_instance <= 0:
        return False
    return slots <= slots_per_instance or slots % slots_per_instance == 0


def running_cost(
    instances: Sequence[Instance], counted: Mapping[str, datetime], offers: Sequence[Offer]
) -> float:
    """USD per hour of the counted instances, by their offer's price (the unit offer's when the
    cloud did not say which offer an instance came from)."""
    if not offers:
        return 0.0
    prices = {offer.key: offer.price_per_hour for offer in offers}
    by_id = {instance.id: instance for instance in instances}
    total = 0.0
    for instance_id in counted:
        instance = by_id.get(instance_id)
        key = instance.offer_key if instance is not None else None
        total += prices.get(key or "", offers[0].price_per_hour)
    return total


def record_offer_attempt(
    state: TickState,
    settings: ProvisioningSettings,
    now: datetime,
    result: OfferLaunchResult,
) -> tuple[TickState, list[Decision]]:
    """The state after one launch over offers: refused offers go cold (capacity, quota, price),
    offers that gave machines end their streak; one decision per refused offer."""
    offers = state.offers
    decisions: list[Decision] = []
    for error in result.errors:
        if error.kind not in COLD_KINDS:
            continue
        offers = record_capacity_error(
            offers, settings.offer_settings, error.offer_key, now, error.message
        )
        until = offers.cold[error.offer_key].cold_until
        reason = f"{error.offer_key}: {error.message}; cold until {until.isoformat()}"
        decisions.append(Decision(now, DecisionKind.OFFER_COLD, reason))
    for key, ids in result.launched.items():
        if ids:
            offers = record_offer_success(offers, key)
    return replace(state, offers=offers), decisions


def record_launch(
    state: TickState,
    settings: ProvisioningSettings,
    now: datetime,
    *,
    requested: int,
    instance_ids: Sequence[str] = (),
    failure: LaunchFailure | None = None,
) -> tuple[TickState, Decision]:
    """The state after a launch call answered (ids) or raised (failure), and its record.

    A launch that gives some instances is a success even when fewer than asked; one that gives
    none without raising counts as a failure.
    """
    if failure is None and instance_ids:
        decider = remember_launch(state.decider, instance_ids, now)
        reason = f"{len(instance_ids)} of {requested} requested"
        decision = Decision(now, DecisionKind.LAUNCHED, reason, tuple(instance_ids), requested)
        return replace(state, decider=decider, launch_errors=record_success(state.launch_errors)), (
            decision
        )
    cause: LaunchFailure | str = failure if failure is not None else "the cloud gave no instances"
    errors = record_failure(state.launch_errors, settings.launch_errors, now, cause)
    decision = Decision(now, DecisionKind.LAUNCH_FAILED, str(cause), (), requested)
    return replace(state, launch_errors=errors), decision


def _problem_decisions(instances: Sequence[Instance], now: datetime) -> list[Decision]:
    by_problem: dict[str, list[str]] = {}
    for instance in instances:
        if instance.problem:
            by_problem.setdefault(instance.problem, []).append(instance.id)
    return [
        Decision(now, DecisionKind.INSTANCE_PROBLEM, problem, tuple(sorted(ids)), len(ids))
        for problem, ids in sorted(by_problem.items())
    ]


def _termination_decisions(terminate: Sequence[Termination], now: datetime) -> list[Decision]:
    by_reason: dict[TerminationReason, list[str]] = {}
    for termination in terminate:
        by_reason.setdefault(termination.reason, []).append(termination.instance_id)
    return [
        Decision(now, DecisionKind.TERMINATE, reason.value, tuple(ids), len(ids))
        for reason, ids in by_reason.items()
    ]


def _launch_decisions(
    snapshot: TickSnapshot, scaling: ScalingPlan, error: LaunchError | None
) -> list[Decision]:
    limits = snapshot.settings.decider
    counted = len(scaling.classes.counted)
    starting = len(scaling.classes.recently_launched)
    wanted = snapshot.desired_new_instances - starting
    context = (
        f"desired {snapshot.desired_new_instances}, {starting} starting, {counted} counted, "
        f"min {limits.min_instances}, max {limits.max_instances}"
    )
    now, launch = snapshot.now, scaling.launch
    if launch > 0 and error is not None:
        reason = (
            f"launch error visible until {error.visible_until.isoformat()} after "
            f"{error.failures} failures: {error.message}; {context}"
        )
        return [Decision(now, DecisionKind.LAUNCH_SKIPPED, reason, (), launch)]
    if launch > 0:
        why = "to keep min_instances" if launch > wanted else "for unscheduled work"
        if launch < wanted:
            why = "for unscheduled work, capped by max_instances"
        return [Decision(now, DecisionKind.LAUNCH, f"{why} ({context})", (), launch)]
    if wanted > 0:
        reason = f"{wanted} more wanted but the pool is at its maximum ({context})"
        return [Decision(now, DecisionKind.AT_MAXIMUM, reason, (), wanted)]
    return []
