"""Workspace slot quotas in every scheduler: tables of the cases, and properties over random
snapshots (no plan puts a workspace over its quota; quotas that never bind change no plan)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resource_pools.fair_share import FairShareScheduler
from resource_pools.job_queue import job_queue
from resource_pools.priority import PriorityScheduler
from resource_pools.quota import QuotaLedger, quota_detail
from resource_pools.round_robin import RoundRobinScheduler
from resource_pools.types import (
    AgentState,
    JobSettings,
    Placement,
    PoolSnapshot,
    Request,
    RunningAllocation,
    SchedulingPlan,
    WaitReason,
)

AnyScheduler = PriorityScheduler | FairShareScheduler | RoundRobinScheduler

SCHEDULERS: dict[str, Callable[[], AnyScheduler]] = {
    "priority": PriorityScheduler,
    "priority+preemption": lambda: PriorityScheduler(preemption=True),
    "fair_share": FairShareScheduler,
    "round_robin": RoundRobinScheduler,
}


def request(
    rid: str, job: str, slots: int, *, at: float = 0.0, preemptible: bool = True
) -> Request:
    return Request(rid, job, slots, preemptible=preemptible, job_submitted_at=at, requested_at=at)


def running(rid: str, job: str, slots: int, agent: str, *, at: float = 0.0) -> RunningAllocation:
    return RunningAllocation(request(rid, job, slots, at=at), (Placement(agent, slots),))


def snapshot(
    agents: Mapping[str, int],
    *,
    pending: Sequence[Request] = (),
    allocated: Sequence[RunningAllocation] = (),
    workspaces: Mapping[str, str],
    quotas: Mapping[str, int],
    priorities: Mapping[str, int] | None = None,
) -> PoolSnapshot:
    used: dict[str, int] = {}
    for a in allocated:
        for p in a.placements:
            used[p.agent_id] = used.get(p.agent_id, 0) + p.slots
    jobs = {r.job_id for r in pending} | {a.job_id for a in allocated}
    return PoolSnapshot(
        agents=tuple(AgentState(k, slots, used.get(k, 0)) for k, slots in sorted(agents.items())),
        pending=tuple(pending),
        running=tuple(allocated),
        groups={
            j: JobSettings(j, priority=(priorities or {}).get(j), workspace=workspaces.get(j))
            for j in jobs
        },
        quotas=quotas,
    )


def started(plan: SchedulingPlan) -> set[str]:
    return {s.allocation_id for s in plan.start}


def waits(plan: SchedulingPlan) -> dict[str, tuple[WaitReason, str]]:
    return {w.allocation_id: (w.reason, w.detail) for w in plan.waiting}


FULL = (WaitReason.WORKSPACE_QUOTA, "waiting: workspace quota 8 of 8 slots in use")


@pytest.mark.parametrize("kind", SCHEDULERS)
def test_a_full_quota_holds_the_job_back_and_others_go_on(kind: str) -> None:
    # Workspace a holds 8 of its 8 slots; its next job waits although the pool has room, and
    # workspace b's job (queued behind it, less important) starts.
    snap = snapshot(
        {"n1": 8, "n2": 8},
        allocated=[running("a-run", "a1", 8, "n1")],
        pending=[request("a-next", "a2", 4, at=1), request("b-next", "b1", 4, at=2)],
        workspaces={"a1": "a", "a2": "a", "b1": "b"},
        quotas={"a": 8},
        priorities={"a2": 1, "b1": 90},
    )
    plan = SCHEDULERS[kind]().schedule(snap)
    assert started(plan) == {"b-next"}
    assert waits(plan) == {"a-next": FULL}
    assert plan.preempt == ()


@pytest.mark.parametrize("kind", SCHEDULERS)
def test_a_held_job_is_no_reason_to_preempt(kind: str) -> None:
    # The pool is full of b's preemptible work; a's important job is held by a's quota (it
    # could not start even with room made), so nothing is preempted for it.
    snap = snapshot(
        {"n1": 8},
        allocated=[running("a-run", "a1", 4, "n1"), running("b-run", "b1", 4, "n1")],
        pending=[request("a-next", "a2", 4, at=1)],
        workspaces={"a1": "a", "a2": "a", "b1": "b"},
        quotas={"a": 4},
        priorities={"a2": 1, "b1": 90, "a1": 90},
    )
    plan = SCHEDULERS[kind]().schedule(snap)
    assert plan.preempt == ()
    assert waits(plan)["a-next"] == (
        WaitReason.WORKSPACE_QUOTA,
        "waiting: workspace quota 4 of 4 slots in use",
    )


@pytest.mark.parametrize("kind", SCHEDULERS)
def test_starts_in_one_pass_stop_at_the_quota(kind: str) -> None:
    snap = snapshot(
        {"n1": 16},
        pending=[request("first", "a1", 4, at=1), request("second", "a2", 4, at=2)],
        workspaces={"a1": "a", "a2": "a"},
        quotas={"a": 6},
    )
    plan = SCHEDULERS[kind]().schedule(snap)
    assert started(plan) == {"first"}
    assert waits(plan) == {
        "second": (
            WaitReason.WORKSPACE_QUOTA,
            "waiting: workspace quota 4 of 6 slots in use; 4 slots requested",
        )
    }


@pytest.mark.parametrize("kind", SCHEDULERS)
def test_aux_work_and_unquoted_workspaces_are_never_held(kind: str) -> None:
    snap = snapshot(
        {"n1": 8},
        allocated=[running("a-run", "a1", 2, "n1")],
        pending=[request("a-aux", "a2", 0, at=1), request("c-big", "c1", 6, at=2)],
        workspaces={"a1": "a", "a2": "a", "c1": "c"},
        quotas={"a": 2},
    )
    plan = SCHEDULERS[kind]().schedule(snap)
    assert started(plan) == {"a-aux", "c-big"}


@pytest.mark.parametrize("kind", SCHEDULERS)
def test_a_quota_lowered_below_use_stops_starts_but_preempts_nothing(kind: str) -> None:
    snap = snapshot(
        {"n1": 8},
        allocated=[running("a-run", "a1", 6, "n1")],
        pending=[request("a-next", "a2", 1, at=1)],
        workspaces={"a1": "a", "a2": "a"},
        quotas={"a": 4},
    )
    plan = SCHEDULERS[kind]().schedule(snap)
    assert started(plan) == set() and plan.preempt == ()
    assert waits(plan)["a-next"][1] == "waiting: workspace quota 6 of 4 slots in use"


@pytest.mark.parametrize("kind", SCHEDULERS)
def test_a_zero_quota_allows_aux_work_only(kind: str) -> None:
    snap = snapshot(
        {"n1": 8},
        pending=[request("slots", "a1", 1, at=1), request("aux", "a2", 0, at=2)],
        workspaces={"a1": "a", "a2": "a"},
        quotas={"a": 0},
    )
    plan = SCHEDULERS[kind]().schedule(snap)
    assert started(plan) == {"aux"}
    assert waits(plan)["slots"][0] is WaitReason.WORKSPACE_QUOTA


def test_the_queue_shows_why_a_job_waits() -> None:
    snap = snapshot(
        {"n1": 8, "n2": 8},
        allocated=[running("a-run", "a1", 8, "n1")],
        pending=[request("a-next", "a2", 8, at=1)],
        workspaces={"a1": "a", "a2": "a"},
        quotas={"a": 8},
    )
    scheduler = PriorityScheduler()
    infos = {i.job_id: i for i in job_queue(snap, scheduler.schedule(snap), scheduler)}
    assert infos["a2"].wait_reason == "waiting: workspace quota 8 of 8 slots in use"
    assert infos["a2"].wait_code is WaitReason.WORKSPACE_QUOTA


def test_quota_details() -> None:
    assert quota_detail(8, 8, 1) == "waiting: workspace quota 8 of 8 slots in use"
    assert (
        quota_detail(2, 8, 7) == "waiting: workspace quota 2 of 8 slots in use; 7 slots requested"
    )
    assert quota_detail(0, 8, 9) == (
        "waiting: workspace quota 0 of 8 slots in use; 9 slots requested, more than the quota"
    )


def test_negative_quotas_are_refused() -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        PoolSnapshot(agents=(), quotas={"a": -1})


# --- properties over random snapshots -----------------------------------------------------------

WORKSPACES = ("w1", "w2", "w3")


@st.composite
def snapshots(draw: st.DrawFn) -> PoolSnapshot:
    agents: list[AgentState] = []
    allocated: list[RunningAllocation] = []
    jobs: dict[str, JobSettings] = {}

    def job(name: str) -> str:
        if name not in jobs:
            jobs[name] = JobSettings(
                name,
                weight=draw(st.sampled_from([0.5, 1.0, 2.0])),
                priority=draw(st.sampled_from([None, 10, 42, 60])),
                max_slots=draw(st.sampled_from([None, None, 4])),
                workspace=draw(st.sampled_from([*WORKSPACES, None])),
            )
        return name

    job_names = st.sampled_from([f"job{i}" for i in range(6)])
    for index in range(draw(st.integers(0, 4))):
        slots = draw(st.sampled_from([1, 2, 4, 8]))
        used = 0
        for _ in range(draw(st.integers(0, 2))):
            take = draw(st.integers(1, 4))
            if used + take > slots:
                break
            rid = f"run{len(allocated)}"
            allocated.append(
                RunningAllocation(
                    Request(
                        rid,
                        job(draw(job_names)),
                        take,
                        preemptible=draw(st.booleans()),
                        job_submitted_at=draw(st.integers(0, 5)),
                    ),
                    (Placement(f"n{index}", take),),
                )
            )
            used += take
        agents.append(AgentState(f"n{index}", slots, used))
    pending = [
        Request(
            f"req{i}",
            job(draw(job_names)),
            draw(st.sampled_from([0, 1, 1, 2, 3, 4, 8])),
            preemptible=draw(st.booleans()),
            job_submitted_at=draw(st.integers(0, 5)),
            requested_at=draw(st.integers(0, 5)),
        )
        for i in range(draw(st.integers(0, 10)))
    ]
    quotas = draw(st.dictionaries(st.sampled_from(WORKSPACES), st.integers(0, 10), max_size=3))
    return PoolSnapshot(
        agents=tuple(agents),
        pending=tuple(pending),
        running=tuple(allocated),
        groups=jobs,
        quotas=quotas,
    )


def _slots_by_workspace(snap: PoolSnapshot, items: Sequence[tuple[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for job_id, slots in items:
        workspace = snap.group(job_id).workspace
        if workspace is not None:
            out[workspace] = out.get(workspace, 0) + slots
    return out


@settings(max_examples=400, deadline=None)
@given(snapshots(), st.sampled_from(sorted(SCHEDULERS)))
def test_no_plan_puts_a_workspace_over_its_quota(snap: PoolSnapshot, kind: str) -> None:
    plan = SCHEDULERS[kind]().schedule(snap)
    assert plan.is_total_for(snap.pending)
    jobs = {r.allocation_id: r.job_id for r in snap.pending}
    held = _slots_by_workspace(snap, [(a.job_id, a.slots) for a in snap.running])
    new = _slots_by_workspace(
        snap, [(jobs[s.allocation_id], sum(p.slots for p in s.placements)) for s in plan.start]
    )
    for workspace, limit in snap.quotas.items():
        if new.get(workspace, 0):
            assert held.get(workspace, 0) + new[workspace] <= limit, (workspace, plan)


@settings(max_examples=400, deadline=None)
@given(snapshots(), st.sampled_from(sorted(SCHEDULERS)))
def test_quotas_that_never_bind_change_no_plan(snap: PoolSnapshot, kind: str) -> None:
    # The same snapshot with no quotas at all, and with quotas no workspace can reach: the
    # ledger runs (charges, checks) in the second, and the plans are equal.
    free = replace(snap, quotas={})
    roomy = replace(snap, quotas={w: 10_000 for w in WORKSPACES})
    scheduler = SCHEDULERS[kind]()
    assert scheduler.schedule(free) == scheduler.schedule(roomy)


@settings(max_examples=200, deadline=None)
@given(snapshots())
def test_a_quota_held_request_starts_nothing_of_its_workspace_it_would_exceed(
    snap: PoolSnapshot,
) -> None:
    # What the ledger says matches what it counted: a request it refuses would take its
    # workspace past the quota.
    ledger = QuotaLedger(snap)
    for r in snap.pending:
        refused = ledger.refuses(r)
        workspace = snap.group(r.job_id).workspace
        if refused is None:
            ledger.charge(r)
            continue
        assert workspace is not None and r.slots > 0
        assert ledger.used(workspace) + r.slots > snap.quotas[workspace]
