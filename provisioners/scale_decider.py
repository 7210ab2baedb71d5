"""The scale decider: which instances to terminate and how many to launch (reference §2.3).

`decide_scaling(snapshot) -> ScalingPlan` is pure: the cloud's instances, the connected agents,
the demand, the settings, `now` and the memory of the previous call go in; the classification,
the terminations with their reasons, the launch count and the next memory come out. The same
snapshot always gives the same plan, whatever the order of its instances.

Two things Determined keeps in the provisioner object live in `DeciderMemory` instead, so the
master can store them and a restart resumes the timers: when each instance was first seen idle
or disconnected, and the last state seen per instance. A third is ours: ids that a launch
returned but the (eventually consistent) cloud does not list yet count as recently launched until
they show up or `max_agent_starting_period` passes, so a lagging list does not launch twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from provisioners.base import Instance, InstanceState

_ACTIVE = (InstanceState.STARTING, InstanceState.RUNNING)


class TerminationReason(StrEnum):
    """Why an instance is terminated; the values are Determined's own reason strings."""

    STOPPED = "stopped"
    LONG_DISCONNECTED = "long disconnected"
    LONG_IDLE = "long idle"
    OVER_MAXIMUM = "instance number exceeding maximum"


@dataclass(frozen=True)
class DeciderSettings:
    """The provider keys the decider reads (reference §2.9) plus the fixed disconnect grace."""

    min_instances: int = 0
    max_instances: int = 5
    max_idle_agent_period: timedelta = timedelta(minutes=20)
    max_agent_starting_period: timedelta = timedelta(minutes=20)
    max_disconnect_period: timedelta = timedelta(minutes=10)

    def __post_init__(self) -> None:
        if self.min_instances < 0:
            raise ValueError(f"min_instances must be >= 0, got {self.min_instances}")
        if self.max_instances < self.min_instances:
            raise ValueError(
                f"max_instances ({self.max_instances}) must be >= min_instances "
                f"({self.min_instances})"
            )
        for name in ("max_idle_agent_period", "max_agent_starting_period", "max_disconnect_period"):
            if getattr(self, name) < timedelta(0):
                raise ValueError(f"{name} must not be negative")


@dataclass(frozen=True)
class DeciderMemory:
    """What one decision leaves for the next; keyed by instance id. Treat it as read-only."""

    idle_since: Mapping[str, datetime] = field(default_factory=dict[str, datetime])
    disconnected_since: Mapping[str, datetime] = field(default_factory=dict[str, datetime])
    last_state: Mapping[str, InstanceState] = field(default_factory=dict[str, InstanceState])
    state_since: Mapping[str, datetime] = field(default_factory=dict[str, datetime])
    unlisted_launches: Mapping[str, datetime] = field(default_factory=dict[str, datetime])


@dataclass(frozen=True)
class ScalingSnapshot:
    """Everything one decision needs.

    `agents` maps each connected agent's name to whether it is idle; an instance matches an
    agent whose name equals its `agent_name`. Duplicate instance ids keep the first.
    """

    now: datetime
    instances: Sequence[Instance]
    agents: Mapping[str, bool]
    desired_new_instances: int
    settings: DeciderSettings = field(default_factory=DeciderSettings)
    memory: DeciderMemory = field(default_factory=DeciderMemory)


@dataclass(frozen=True)
class InstanceClasses:
    """The classification of reference §2.3 (scenario S1), by instance id.

    `counted` holds every instance that counts toward min/max, with its launch time; `idle` and
    `disconnected` carry the time each was first seen so.
    """

    counted: Mapping[str, datetime]
    pending: frozenset[str]
    recently_launched: frozenset[str]
    idle: Mapping[str, datetime]
    long_idle: frozenset[str]
    disconnected: Mapping[str, datetime]
    long_disconnected: frozenset[str]
    stopped: frozenset[str]
    ignored: frozenset[str]
    unlisted: frozenset[str]


@dataclass(frozen=True)
class Termination:
    instance_id: str
    reason: TerminationReason


@dataclass(frozen=True)
class ScalingPlan:
    """The decision: terminate these (in order, each with its reason), launch `launch` more."""

    classes: InstanceClasses
    terminate: tuple[Termination, ...]
    launch: int
    memory: DeciderMemory

    @property
    def terminate_ids(self) -> list[str]:
        return [t.instance_id for t in self.terminate]


def decide_scaling(snapshot: ScalingSnapshot) -> ScalingPlan:
    """Classify the instances, choose terminations and the launch count (reference §2.3)."""
    classes, memory = _classify(snapshot)
    terminate = _choose_terminations(classes, snapshot.settings)
    launch = _launch_count(classes, snapshot.settings, snapshot.desired_new_instances)
    chosen = {t.instance_id for t in terminate}
    memory = DeciderMemory(
        idle_since=memory.idle_since,
        disconnected_since=memory.disconnected_since,
        last_state=memory.last_state,
        state_since=memory.state_since,
        unlisted_launches={i: at for i, at in memory.unlisted_launches.items() if i not in chosen},
    )
    return ScalingPlan(classes=classes, terminate=terminate, launch=launch, memory=memory)


def remember_launch(
    memory: DeciderMemory, instance_ids: Iterable[str], now: datetime
) -> DeciderMemory:
    """The memory after a launch returned `instance_ids`: they count until the cloud lists them."""
    unlisted = dict(memory.unlisted_launches)
    for instance_id in instance_ids:
        unlisted.setdefault(instance_id, now)
    return DeciderMemory(
        idle_since=memory.idle_since,
        disconnected_since=memory.disconnected_since,
        last_state=memory.last_state,
        state_since=memory.state_since,
        unlisted_launches=unlisted,
    )


@dataclass
class _Sorting:
    """Mutable accumulator for one classification pass."""

    counted: dict[str, datetime] = field(default_factory=dict[str, datetime])
    pending: set[str] = field(default_factory=set[str])
    recent: set[str] = field(default_factory=set[str])
    idle: dict[str, datetime] = field(default_factory=dict[str, datetime])
    long_idle: set[str] = field(default_factory=set[str])
    disconnected: dict[str, datetime] = field(default_factory=dict[str, datetime])
    long_disconnected: set[str] = field(default_factory=set[str])
    stopped: set[str] = field(default_factory=set[str])
    ignored: set[str] = field(default_factory=set[str])
    unlisted: set[str] = field(default_factory=set[str])


def _classify(snapshot: ScalingSnapshot) -> tuple[InstanceClasses, DeciderMemory]:
    now, memory = snapshot.now, snapshot.memory
    acc = _Sorting()
    last_state: dict[str, InstanceState] = {}
    state_since: dict[str, datetime] = {}
    for instance in _unique(snapshot.instances):
        _sort_one(instance, snapshot, acc)
        last_state[instance.id] = instance.state
        unchanged = memory.last_state.get(instance.id) == instance.state
        state_since[instance.id] = memory.state_since.get(instance.id, now) if unchanged else now
    unlisted: dict[str, datetime] = {}
    for instance_id, launched_at in memory.unlisted_launches.items():
        within = now - launched_at < snapshot.settings.max_agent_starting_period
        if instance_id not in last_state and within:
            unlisted[instance_id] = launched_at
            acc.counted[instance_id] = launched_at
            acc.recent.add(instance_id)
            acc.unlisted.add(instance_id)
    classes = InstanceClasses(
        counted=acc.counted,
        pending=frozenset(acc.pending),
        recently_launched=frozenset(acc.recent),
        idle=acc.idle,
        long_idle=frozenset(acc.long_idle),
        disconnected=acc.disconnected,
        long_disconnected=frozenset(acc.long_disconnected),
        stopped=frozenset(acc.stopped),
        ignored=frozenset(acc.ignored),
        unlisted=frozenset(acc.unlisted),
    )
    new_memory = DeciderMemory(
        idle_since=dict(acc.idle),
        disconnected_since=dict(acc.disconnected),
        last_state=last_state,
        state_since=state_since,
        unlisted_launches=unlisted,
    )
    return classes, new_memory


def _unique(instances: Iterable[Instance]) -> list[Instance]:
    seen: dict[str, Instance] = {}
    for instance in instances:
        seen.setdefault(instance.id, instance)
    return list(seen.values())


def _sort_one(instance: Instance, snapshot: ScalingSnapshot, acc: _Sorting) -> None:
    now, settings, memory = snapshot.now, snapshot.settings, snapshot.memory
    iid = instance.id
    if instance.state is InstanceState.SPOT_REQUEST_PENDING:
        acc.counted[iid] = instance.launch_time
        acc.pending.add(iid)
        acc.recent.add(iid)
    elif instance.state in _ACTIVE:
        acc.counted[iid] = instance.launch_time
        is_idle = snapshot.agents.get(instance.agent_name)
        if is_idle is True:
            since = memory.idle_since.get(iid, now)
            acc.idle[iid] = since
            if now > since + settings.max_idle_agent_period:
                acc.long_idle.add(iid)
        elif is_idle is None:
            if now - instance.launch_time < settings.max_agent_starting_period:
                acc.recent.add(iid)
            else:
                since = memory.disconnected_since.get(iid, now)
                acc.disconnected[iid] = since
                if now > since + settings.max_disconnect_period:
                    acc.long_disconnected.add(iid)
    elif instance.state is InstanceState.STOPPED:
        acc.stopped.add(iid)
    else:
        acc.ignored.add(iid)


def _choose_terminations(
    classes: InstanceClasses, settings: DeciderSettings
) -> tuple[Termination, ...]:
    chosen: dict[str, TerminationReason] = {}
    for iid in sorted(classes.stopped):
        chosen[iid] = TerminationReason.STOPPED
    for iid in _oldest_first(classes.disconnected, classes.long_disconnected):
        chosen[iid] = TerminationReason.LONG_DISCONNECTED
    remaining = len(classes.counted) - sum(1 for iid in chosen if iid in classes.counted)
    for iid in _oldest_first(classes.idle, classes.long_idle):
        if remaining <= settings.min_instances:
            break
        chosen[iid] = TerminationReason.LONG_IDLE
        remaining -= 1
    if remaining > settings.max_instances:
        for iid in _over_maximum_order(classes):
            if remaining <= settings.max_instances:
                break
            if iid not in chosen:
                chosen[iid] = TerminationReason.OVER_MAXIMUM
                remaining -= 1
    return tuple(Termination(iid, reason) for iid, reason in chosen.items())


def _oldest_first(since: Mapping[str, datetime], ids: Iterable[str]) -> list[str]:
    return sorted(ids, key=lambda iid: (since[iid], iid))


def _over_maximum_order(classes: InstanceClasses) -> Iterator[str]:
    """Spot requests first, then idle, then disconnected, then the most recently launched."""
    launched = classes.counted
    yield from sorted(classes.pending, key=lambda iid: (launched[iid], iid), reverse=True)
    yield from _oldest_first(classes.idle, classes.idle)
    yield from _oldest_first(classes.disconnected, classes.disconnected)
    yield from sorted(launched, key=lambda iid: (launched[iid], iid), reverse=True)


def _launch_count(classes: InstanceClasses, settings: DeciderSettings, desired: int) -> int:
    """max(0, clamp(desired - recently launched, min - counted, max - counted))."""
    counted = len(classes.counted)
    wanted = desired - len(classes.recently_launched)
    low = settings.min_instances - counted
    high = settings.max_instances - counted
    return max(0, min(max(low, wanted), high))


def memory_to_json(memory: DeciderMemory) -> dict[str, dict[str, str]]:
    """The memory as JSON-ready dicts of ISO timestamps and state names, for the master's DB."""
    return {
        "idle_since": _times_to_json(memory.idle_since),
        "disconnected_since": _times_to_json(memory.disconnected_since),
        "last_state": {iid: state.value for iid, state in sorted(memory.last_state.items())},
        "state_since": _times_to_json(memory.state_since),
        "unlisted_launches": _times_to_json(memory.unlisted_launches),
    }


def memory_from_json(data: Mapping[str, Mapping[str, str]]) -> DeciderMemory:
    """The inverse of `memory_to_json`; missing keys are empty, unknown states are UNKNOWN."""
    states = {iid: _state(v) for iid, v in data.get("last_state", {}).items()}
    return DeciderMemory(
        idle_since=_times_from_json(data.get("idle_since", {})),
        disconnected_since=_times_from_json(data.get("disconnected_since", {})),
        last_state=states,
        state_since=_times_from_json(data.get("state_since", {})),
        unlisted_launches=_times_from_json(data.get("unlisted_launches", {})),
    )


def _times_to_json(times: Mapping[str, datetime]) -> dict[str, str]:
    return {iid: at.isoformat() for iid, at in sorted(times.items())}


def _times_from_json(data: Mapping[str, str]) -> dict[str, datetime]:
    return {iid: datetime.fromisoformat(at) for iid, at in data.items()}


def _state(value: str) -> InstanceState:
    try:
        return InstanceState(value)
    except ValueError:
        return InstanceState.UNKNOWN
