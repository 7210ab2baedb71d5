"""Load one pool's scheduling inputs from the database and the agent registry.

`load_pool_rows` is the only I/O; `build_snapshot` turns rows and agents into the pure
library's `PoolSnapshot`, plus the device ids in use on every agent (the library counts slots;
the master must name devices).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, exists, func, or_, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, Command, Job, PoolQuota, Task, Trial
from controlplane.domain.command_states import CommandState
from controlplane.domain.states import RunState
from controlplane.services.scheduling import kills
from controlplane.services.scheduling.kills import KillCandidates
from controlplane.services.scheduling.registry import AgentHandle
from resource_pools.types import (
    AgentState,
    JobSettings,
    Placement,
    PoolSnapshot,
    Request,
    RunningAllocation,
)

# Trials checkpoint and resume; commands, notebooks and shells are never preempted.
PREEMPTIBLE_TYPES = frozenset({"TRIAL"})
_IN_CHUNK = 500


@dataclass(frozen=True)
class PendingRow:
    task_id: str
    job_id: str
    task_type: str
    slots: int
    single_node: bool
    requested_at: datetime


@dataclass(frozen=True)
class RunningRow:
    allocation_id: str
    task_id: str
    job_id: str
    task_type: str
    slots: int
    single_node: bool
    placement: dict[str, list[int]]
    requested_at: datetime


@dataclass(frozen=True)
class JobRow:
    job_id: str
    priority: int | None
    weight: float
    max_slots: int | None
    queue_position: int
    submitted_at: datetime
    workspace_id: int = 1
    # The workspace's slot quota in this pool (workspace_pool_quotas); None: no quota.
    workspace_quota: int | None = None


@dataclass(frozen=True)
class PoolRows:
    pending: Sequence[PendingRow] = ()
    running: Sequence[RunningRow] = ()
    jobs: Sequence[JobRow] = ()
    # Read with the running allocations (None: rows built without them, e.g. in tests).
    kills: KillCandidates | None = None


@dataclass(frozen=True)
class PoolInputs:
    snapshot: PoolSnapshot
    used_devices: dict[str, set[int]] = field(default_factory=dict)
    rows: PoolRows = field(default_factory=PoolRows)


def live_allocation_of(task_id_column: object) -> object:
    return exists().where(and_(Allocation.task_id == task_id_column, Allocation.end_time.is_(None)))


_JOB_COLUMNS = (
    Job.job_id,
    Job.priority,
    Job.weight,
    Job.max_slots,
    Job.queue_position,
    Job.submitted_at,
    Job.workspace_id,
    PoolQuota.max_slots,
)
# A job's workspace quota in the pass's pool, read with the job (no statement of its own).
_QUOTA_OF_JOB = and_(
    PoolQuota.workspace_id == Job.workspace_id, PoolQuota.resource_pool == bindparam("pool")
)


# Notebooks, TensorBoards and shells are commands of their own task types (services/interactive),
# and so are generic tasks (services/generic_tasks).
COMMAND_TASK_TYPES = ("COMMAND", "NOTEBOOK", "TENSORBOARD", "SHELL", "GENERIC")


def _pending_query(  # type: ignore[no-untyped-def]
    *columns: Any, where: tuple[Any, ...] = (), quotas: bool = False
):
    """Tasks of the pool (bound as ``pool``) that want an allocation, in two branches that each
    start from an index: ACTIVE trials (ix_trials_state) and commands not yet ended
    (ix_tasks_type_end_time). One query with an OR over both read every task the cluster ever
    ran, on every pass. ``quotas``: join each job's workspace quota in the pool."""

    def branch(start: Any, condition: Any) -> Any:
        joined = start.join(Job, Job.job_id == Task.job_id)
        if quotas:
            joined = joined.outerjoin(PoolQuota, _QUOTA_OF_JOB)
        return joined.where(
            condition,
            Job.resource_pool == bindparam("pool"),
            ~live_allocation_of(Task.task_id),  # type: ignore[operator]
            *where,
        )

    # A trial waits while ACTIVE; a command waits until it has run once (it never re-runs:
    # its task ends with its first allocation).
    trials = branch(
        select(*columns).select_from(Trial).join(Task, Task.task_id == Trial.task_id),
        Trial.state == RunState.ACTIVE.value,
    )
    # A paused generic task is open (no end time) but waits for its unpause, not for a slot.
    commands = branch(
        select(*columns).select_from(Task).outerjoin(Command, Command.task_id == Task.task_id),
        and_(
            Task.task_type.in_(COMMAND_TASK_TYPES),
            Task.end_time.is_(None),
            or_(Command.state.is_(None), Command.state != CommandState.PAUSED.value),
        ),
    )
    return union_all(trials, commands)


# Every pass runs these: they are built once, so SQLAlchemy computes their cache keys once.
_PENDING = _pending_query(
    Task.task_id,
    Task.job_id,
    Task.task_type,
    Task.slots,
    Task.single_node,
    Task.start_time,
    *_JOB_COLUMNS,
    quotas=True,
)
_RUNNING = (
    select(
        Allocation.allocation_id,
        Task.task_id,
        Task.job_id,
        Task.task_type,
        Allocation.slots,
        Task.single_node,
        Allocation.placement,
        Allocation.start_time,
        # Which of them the pass must kill, read here rather than by a statement of its own.
        *kills.KILL_COLUMNS,
        *_JOB_COLUMNS,
    )
    .join(Task, Task.task_id == Allocation.task_id)
    .outerjoin(Job, Job.job_id == Task.job_id)
    .outerjoin(PoolQuota, _QUOTA_OF_JOB)
    .outerjoin(Trial, Trial.task_id == Allocation.task_id)
    .outerjoin(Command, Command.task_id == Allocation.task_id)
    .where(Allocation.resource_pool == bindparam("pool"), Allocation.end_time.is_(None))
)
_JOB_AT = 8 + len(kills.KILL_COLUMNS)
_ALLOCATIONS_HAD = (
    select(func.count())
    .select_from(Allocation)
    .where(Allocation.task_id == Task.task_id)
    .scalar_subquery()
)
_STILL_PENDING = _pending_query(
    Task.task_id,
    _ALLOCATIONS_HAD,
    where=(Task.task_id.in_(bindparam("task_ids", expanding=True)),),
)


async def still_pending(
    session: AsyncSession, pool: str, task_ids: Sequence[str]
) -> dict[str, int]:
    """Which of these tasks still want an allocation now (a pass plans outside a transaction),
    each with the number of allocations it has had (the next one's id counts on from it)."""
    out: dict[str, int] = {}
    conn = await session.connection()  # column rows: Core's path, not the ORM's
    for start in range(0, len(task_ids), _IN_CHUNK):
        chunk = list(task_ids[start : start + _IN_CHUNK])
        rows = await conn.execute(_STILL_PENDING, {"pool": pool, "task_ids": chunk})
        out.update({task_id: count for task_id, count in rows.all()})
    return out


@dataclass(frozen=True)
class Queue:
    """A pool's queue as a pass read it: the tasks that want an allocation and their jobs."""

    pending: tuple[PendingRow, ...] = ()
    jobs: Mapping[str, JobRow] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: PoolRows) -> Queue:
        wanted = {p.job_id for p in rows.pending}
        return cls(tuple(rows.pending), {j.job_id: j for j in rows.jobs if j.job_id in wanted})

    def without(self, task_ids: Collection[str]) -> Queue:
        """The queue once these tasks left it (started, or found gone by the pass)."""
        if not task_ids:
            return self
        pending = tuple(p for p in self.pending if p.task_id not in task_ids)
        wanted = {p.job_id for p in pending}
        return Queue(pending, {k: j for k, j in self.jobs.items() if k in wanted})


async def load_pool_rows(session: AsyncSession, pool: str, queue: Queue | None = None) -> PoolRows:
    """Two statements: the queue and the running allocations, each with its jobs' settings
    (and, for the latter, which of them are to be killed); only the second when ``queue``, the
    queue as an earlier pass read it, is given. Run on the session's connection: they read
    columns, not objects, and the ORM's execution path cost a pass over a long queue half as
    much again (a pass starts its own transaction: there is nothing to flush first)."""
    conn = await session.connection()
    jobs: dict[str, JobRow] = {}
    pending: list[PendingRow] = []
    if queue is None:
        for row in (await conn.execute(_PENDING, {"pool": pool})).all():
            pending.append(PendingRow(*row[:6]))
            jobs[row[6]] = JobRow(*row[6:])
    else:
        pending.extend(queue.pending)
        jobs.update(queue.jobs)
    running: list[RunningRow] = []
    to_kill = []
    for row in (await conn.execute(_RUNNING, {"pool": pool})).all():
        running.append(RunningRow(*row[:8]))
        to_kill.append((row[0], row[6], *row[8:_JOB_AT]))
        if row[_JOB_AT] is not None:
            jobs[row[_JOB_AT]] = JobRow(*row[_JOB_AT:])
    return PoolRows(
        pending=pending,
        running=running,
        jobs=list(jobs.values()),
        kills=kills.candidates_of(to_kill),
    )


def _ts(value: datetime) -> float:
    return value.timestamp()


class RequestMemo:
    """A pool's queued requests by task, kept from one pass to the next (each pass keeps only
    those still queued). Requests are immutable, and one is reused only for the same row and
    job submission time, so a pass sees what it would have built."""

    def __init__(self) -> None:
        self._built: dict[str, tuple[PendingRow, datetime | None, Request]] = {}
        self._next: dict[str, tuple[PendingRow, datetime | None, Request]] = {}

    def request(self, p: PendingRow, job: JobRow | None) -> Request:
        submitted_at = job.submitted_at if job is not None else None
        found = self._built.get(p.task_id)
        if found is None or found[1] != submitted_at or found[0] != p:
            found = (
                p,
                submitted_at,
                Request(
                    allocation_id=p.task_id,
                    job_id=p.job_id,
                    slots=p.slots,
                    preemptible=p.task_type in PREEMPTIBLE_TYPES,
                    job_submitted_at=_ts(submitted_at) if submitted_at is not None else 0.0,
                    requested_at=_ts(p.requested_at),
                    single_node=p.single_node,
                    kind=p.task_type,
                ),
            )
        self._next[p.task_id] = found
        return found[2]

    def pass_done(self) -> None:
        """What this pass asked for is what the next one may reuse."""
        self._built, self._next = self._next, {}


def build_snapshot(
    rows: PoolRows,
    agents: Iterable[AgentHandle],
    *,
    max_aux_per_agent: int,
    now: datetime,
    requests: RequestMemo | None = None,
) -> PoolInputs:
    """Pure: rows and connected agents in, the library's snapshot out (with each job's
    workspace and the quotas of those workspaces in this pool).

    Queue positions are handed to the library as ranks (0, 1, ...) so that float precision
    never reorders jobs whose stored positions are close. ``requests``: the pool's queued
    requests as the last pass built them, reused where their rows are unchanged (a queue
    waits through many passes; building each request anew was most of a pass's own CPU).
    """
    jobs = {j.job_id: j for j in rows.jobs}
    ordered = sorted(jobs.values(), key=lambda j: (j.queue_position, j.submitted_at, j.job_id))
    groups = {
        j.job_id: JobSettings(
            job_id=j.job_id,
            weight=max(0.0, j.weight),
            priority=j.priority,
            max_slots=j.max_slots,
            position=float(rank),
            workspace=str(j.workspace_id),
        )
        for rank, j in enumerate(ordered)
    }
    # Each job row carries its workspace's quota in this pool; the rows of one workspace agree.
    quotas = {
        str(j.workspace_id): max(0, j.workspace_quota)
        for j in ordered
        if j.workspace_quota is not None
    }

    def submitted(job_id: str) -> float:
        job = jobs.get(job_id)
        return _ts(job.submitted_at) if job is not None else 0.0

    used: dict[str, set[int]] = {}
    zero_running: dict[str, int] = {}
    running: list[RunningAllocation] = []
    for r in rows.running:
        placements = []
        for agent_id, devices in sorted(r.placement.items()):
            placements.append(Placement(agent_id, len(devices)))
            if devices:
                used.setdefault(agent_id, set()).update(devices)
            else:
                zero_running[agent_id] = zero_running.get(agent_id, 0) + 1
        request = Request(
            allocation_id=r.allocation_id,
            job_id=r.job_id,
            slots=r.slots,
            preemptible=r.task_type in PREEMPTIBLE_TYPES,
            job_submitted_at=submitted(r.job_id),
            requested_at=_ts(r.requested_at),
            single_node=r.single_node,
            kind=r.task_type,
        )
        running.append(RunningAllocation(request, tuple(placements)))

    states: dict[str, AgentState] = {}
    for a in agents:
        live = a.connected
        # A disabled slot is as good as taken for new work.
        unavailable = set(used.get(a.id, ())) | (a.disabled_devices & {d.id for d in a.devices})
        states[a.id] = AgentState(
            id=a.id,
            slots=max(a.slots, len(used.get(a.id, ()))),
            used_slots=len(unavailable),
            max_zero_slot=max_aux_per_agent,
            zero_slot_running=zero_running.get(a.id, 0),
            enabled=a.enabled and live,
            draining=a.draining or not live,
        )
    # Work placed on an agent the master does not know (yet): after a master restart, before
    # the agent reconnects. Count it as a draining agent so its slots stay taken.
    for agent_id in sorted((set(used) | set(zero_running)) - set(states)):
        states[agent_id] = AgentState(
            id=agent_id,
            slots=len(used.get(agent_id, ())),
            used_slots=len(used.get(agent_id, ())),
            max_zero_slot=max_aux_per_agent,
            zero_slot_running=zero_running.get(agent_id, 0),
            enabled=False,
            draining=True,
        )

    memo = requests if requests is not None else RequestMemo()
    pending = [memo.request(p, jobs.get(p.job_id)) for p in rows.pending]
    memo.pass_done()
    snapshot = PoolSnapshot(
        agents=tuple(states[k] for k in sorted(states)),
        pending=tuple(pending),
        running=tuple(running),
        groups=groups,
        now=now.timestamp(),
        quotas=quotas,
    )
    return PoolInputs(snapshot=snapshot, used_devices=used, rows=rows)
