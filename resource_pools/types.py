"""Scheduler inputs and outputs: an immutable pool snapshot in, a scheduling plan out.

Every scheduler is a pure function ``PoolSnapshot -> SchedulingPlan`` (house style §7.2). All
types here are frozen; simulations build new values instead of mutating these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

DEFAULT_MAX_AUX_CONTAINERS_PER_AGENT = 100
PREEMPTED_BY_SCHEDULER = "preempted by the scheduler"


class FittingPolicy(StrEnum):
    """How to choose among agents that can all host a request (``scheduler.fitting_policy``)."""

    BEST = "best"
    WORST = "worst"


class WaitReason(StrEnum):
    """Why a pending request was not started in this pass."""

    INSUFFICIENT_SLOTS = "insufficient_slots"
    NO_AGENT_FITS_GANG = "no_agent_fits_gang"
    BLOCKED_BY_HIGHER_PRIORITY = "blocked_by_higher_priority"
    OVER_FAIR_SHARE = "over_fair_share"
    AUX_CAPACITY = "aux_capacity"
    EXCEEDS_POOL_CAPACITY = "exceeds_pool_capacity"
    BLOCKED_NODES = "blocked_nodes"
    WAITING_FOR_PREEMPTION = "waiting_for_preemption"
    NO_AGENTS = "no_agents"
    WORKSPACE_QUOTA = "workspace_quota"


def _require_non_negative(owner: str, **values: float) -> None:
    for name, value in values.items():
        if value < 0:
            raise ValueError(f"{owner}.{name} must be >= 0, got {value}")


@dataclass(frozen=True, slots=True)
class AgentState:
    """One agent as the scheduler sees it.

    ``slots`` is the device count and ``max_zero_slot`` the aux-container cap
    (``max_aux_containers_per_agent``). ``used_slots`` and ``zero_slot_running`` already include
    every running allocation's placements. A draining agent is also disabled; ``draining`` wins.
    """

    id: str
    slots: int
    used_slots: int = 0
    max_zero_slot: int = DEFAULT_MAX_AUX_CONTAINERS_PER_AGENT
    zero_slot_running: int = 0
    enabled: bool = True
    draining: bool = False

    def __post_init__(self) -> None:
        _require_non_negative(
            "AgentState",
            slots=self.slots,
            used_slots=self.used_slots,
            max_zero_slot=self.max_zero_slot,
            zero_slot_running=self.zero_slot_running,
        )

    @property
    def is_schedulable(self) -> bool:
        """True when new work may be placed here (enabled and not draining)."""
        return self.enabled and not self.draining

    @property
    def total_slots(self) -> int:
        """Device count when enabled, 0 when disabled, the used count while draining."""
        if self.draining:
            return self.used_slots
        return self.slots if self.enabled else 0

    @property
    def empty_slots(self) -> int:
        """Slots free for new work; always 0 on a disabled or draining agent."""
        if not self.is_schedulable:
            return 0
        return max(0, self.slots - self.used_slots)

    @property
    def zero_slot_capacity(self) -> int:
        """Aux-container cap when enabled, 0 when disabled, the running count while draining."""
        if self.draining:
            return self.zero_slot_running
        return self.max_zero_slot if self.enabled else 0

    @property
    def empty_zero_slots(self) -> int:
        """Free aux-container places (never negative, e.g. after the cap was lowered)."""
        return max(0, self.zero_slot_capacity - self.zero_slot_running)

    @property
    def is_idle(self) -> bool:
        """True with no slotted and no zero-slot container; what the provisioner scales down."""
        return self.used_slots == 0 and self.zero_slot_running == 0


@dataclass(frozen=True, slots=True)
class Request:
    """A pending allocation request: ``slots`` devices for one allocation of one job.

    Times are seconds since the epoch. ``blocked_agents`` are agent ids this request must never
    use (filled by log-pattern policies). ``single_node`` forbids spanning agents.
    """

    allocation_id: str
    job_id: str
    slots: int
    preemptible: bool = False
    job_submitted_at: float = 0.0
    requested_at: float = 0.0
    blocked_agents: frozenset[str] = frozenset()
    single_node: bool = False
    kind: str = "TRIAL"

    def __post_init__(self) -> None:
        _require_non_negative("Request", slots=self.slots)
        if not isinstance(self.blocked_agents, frozenset):
            object.__setattr__(self, "blocked_agents", frozenset(self.blocked_agents))

    @property
    def is_zero_slot(self) -> bool:
        """True for aux (CPU-only) work that needs an aux-container place, not devices."""
        return self.slots == 0


@dataclass(frozen=True, slots=True)
class Placement:
    """``slots`` devices on one agent; 0 means one aux-container place."""

    agent_id: str
    slots: int

    def __post_init__(self) -> None:
        _require_non_negative("Placement", slots=self.slots)


@dataclass(frozen=True, slots=True)
class RunningAllocation:
    """An allocation already holding resources; the request it was started for."""

    request: Request
    placements: tuple[Placement, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "placements", tuple(self.placements))

    @property
    def allocation_id(self) -> str:
        """The allocation's id (the request's)."""
        return self.request.allocation_id

    @property
    def job_id(self) -> str:
        """The owning job's id."""
        return self.request.job_id

    @property
    def slots(self) -> int:
        """Devices held across all agents."""
        return sum(p.slots for p in self.placements)


@dataclass(frozen=True, slots=True)
class JobSettings:
    """Per-job scheduling settings (Determined calls a job's entry a "group").

    ``priority`` None means the pool's default priority; lower numbers are more important.
    ``position`` None means not yet assigned: use the job's submission time in microseconds,
    which is how Determined initialises queue positions. ``weight`` and ``max_slots`` only
    matter to fair share. ``workspace`` names the job's quota group (its workspace): the key
    of ``PoolSnapshot.quotas``.
    """

    job_id: str
    weight: float = 1.0
    priority: int | None = None
    max_slots: int | None = None
    position: float | None = None
    workspace: str | None = None

    def __post_init__(self) -> None:
        _require_non_negative("JobSettings", weight=self.weight)
        if self.max_slots is not None:
            _require_non_negative("JobSettings", max_slots=self.max_slots)


@dataclass(frozen=True, slots=True)
class PoolSnapshot:
    """Everything a scheduler may look at for one pass over one pool.

    Agent usage already counts the ``running`` allocations. ``groups`` maps job id to settings;
    a job without an entry gets the defaults. ``now`` is seconds since the epoch; schedulers
    read no clock. ``quotas`` maps a workspace (``JobSettings.workspace``) to the most slots
    its jobs may hold in this pool at once; a workspace without an entry has no quota.
    """

    agents: tuple[AgentState, ...]
    pending: tuple[Request, ...] = ()
    running: tuple[RunningAllocation, ...] = ()
    groups: Mapping[str, JobSettings] = field(default_factory=dict)
    now: float = 0.0
    quotas: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "agents", tuple(self.agents))
        object.__setattr__(self, "pending", tuple(self.pending))
        object.__setattr__(self, "running", tuple(self.running))
        object.__setattr__(self, "groups", MappingProxyType(dict(self.groups)))
        object.__setattr__(self, "quotas", MappingProxyType(dict(self.quotas)))
        for workspace, limit in self.quotas.items():
            if limit < 0:
                raise ValueError(f"quota of workspace {workspace!r} must be >= 0, got {limit}")
        _require_unique("agent id", (a.id for a in self.agents))
        allocation_ids = [r.allocation_id for r in self.pending]
        allocation_ids += [r.allocation_id for r in self.running]
        _require_unique("allocation id", allocation_ids)

    def group(self, job_id: str) -> JobSettings:
        """The job's settings, or the defaults for a job with no entry."""
        return self.groups.get(job_id) or JobSettings(job_id)

    def queue_position(self, request: Request) -> float:
        """The request's job queue position; smaller runs first."""
        position = self.group(request.job_id).position
        if position is None:
            return request.job_submitted_at * 1_000_000
        return position


def _require_unique(what: str, values: Iterable[str]) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"duplicate {what} in snapshot: {value!r}")
        seen.add(value)


@dataclass(frozen=True, slots=True)
class StartAllocation:
    """Start a pending request on these placements; ``backfilled`` when started behind a
    higher-priority request that did not fit."""

    allocation_id: str
    placements: tuple[Placement, ...]
    backfilled: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "placements", tuple(self.placements))


@dataclass(frozen=True, slots=True)
class PreemptAllocation:
    """Ask a running allocation to release its resources. Not a kill: it chooses how to stop."""

    allocation_id: str
    reason: str = PREEMPTED_BY_SCHEDULER


@dataclass(frozen=True, slots=True)
class Waiting:
    """A pending request left waiting, with a machine-readable reason and a readable detail."""

    allocation_id: str
    reason: WaitReason
    detail: str = ""


@dataclass(frozen=True, slots=True)
class SchedulingPlan:
    """The result of one scheduling pass.

    Totality invariant: every pending request of the snapshot appears exactly once, either in
    ``start`` or in ``waiting``, and nothing else appears there. ``preempt`` names only running,
    preemptible allocations. The same snapshot always yields an equal plan.
    """

    start: tuple[StartAllocation, ...] = ()
    preempt: tuple[PreemptAllocation, ...] = ()
    waiting: tuple[Waiting, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", tuple(self.start))
        object.__setattr__(self, "preempt", tuple(self.preempt))
        object.__setattr__(self, "waiting", tuple(self.waiting))

    def is_total_for(self, pending: Sequence[Request]) -> bool:
        """True when start and waiting together hold each pending id exactly once, and no other."""
        decided = [s.allocation_id for s in self.start] + [w.allocation_id for w in self.waiting]
        expected = [r.allocation_id for r in pending]
        return len(decided) == len(set(decided)) and sorted(decided) == sorted(expected)
