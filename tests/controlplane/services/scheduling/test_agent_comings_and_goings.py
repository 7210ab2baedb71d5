"""The pure decisions about agents coming and going: the reattach plan, a changed agent, the
reconnect wait, and the preemption timeout, as tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent.protocol import (
    Container,
    ContainerFailure,
    ContainerReattached,
    ContainerState,
    Device,
    FailureType,
)
from controlplane.domain.states import AllocationState
from controlplane.domain.trial_exit import TRANSIENT_FAILURES
from controlplane.services.scheduling.agent_loss import (
    agents_past_reconnect_wait,
    refuses_reconnect,
)
from controlplane.services.scheduling.kills import is_past_timeout, preemption_timeout
from controlplane.services.scheduling.placements import PlacedContainer, containers_of
from controlplane.services.scheduling.reattach import NOT_REATTACHED, mismatch, plan_reattach
from controlplane.services.scheduling.registry import AgentHandle

T0 = datetime(2025, 1, 1, tzinfo=UTC)
WAIT = timedelta(seconds=25)


def placed(cid: str = "t.1-0", state: str = "RUNNING", devices: tuple[int, ...] = (0,)):  # type: ignore[no-untyped-def]
    return PlacedContainer(
        container_id=cid,
        allocation_id=cid.rpartition("-")[0],
        agent_id="a1",
        rank=0,
        state=state,
        device_ids=devices,
        resource_pool="default",
    )


def ack(
    cid: str = "t.1-0",
    state: ContainerState = ContainerState.RUNNING,
    failure: ContainerFailure | None = None,
) -> ContainerReattached:
    return ContainerReattached(container=Container(id=cid, state=state), failure=failure)


class TestPlanReattach:
    def test_acked_running_container_is_kept(self) -> None:
        plan = plan_reattach([placed()], [ack()])
        assert [(k.container.container_id, k.state) for k in plan.kept] == [
            ("t.1-0", AllocationState.RUNNING)
        ]
        assert plan.ended == () and plan.strays == ()

    def test_an_ack_ahead_of_the_database_moves_the_state_forward_never_back(self) -> None:
        ahead = plan_reattach([placed(state="ASSIGNED")], [ack(state=ContainerState.RUNNING)])
        assert ahead.kept[0].state is AllocationState.RUNNING
        behind = plan_reattach([placed(state="RUNNING")], [ack(state=ContainerState.PULLING)])
        assert behind.kept[0].state is AllocationState.RUNNING

    @pytest.mark.parametrize(
        ("the_ack", "exit_code", "failure", "kill", "detail"),
        [
            (None, None, FailureType.RESTORE_ERROR.value, True, NOT_REATTACHED),
            (
                ack(
                    state=ContainerState.TERMINATED,
                    failure=ContainerFailure(type=FailureType.UNKNOWN_CONTAINER, message="gone"),
                ),
                None,
                FailureType.RESTORE_ERROR.value,
                True,
                "unknown container: gone",
            ),
            (ack(state=ContainerState.TERMINATED), 0, None, False, "exited while disconnected"),
            (
                ack(
                    state=ContainerState.TERMINATED,
                    failure=ContainerFailure(type=FailureType.CONTAINER_FAILED, exit_code=2),
                ),
                2,
                FailureType.CONTAINER_FAILED.value,
                False,
                "exited",
            ),
            (
                ack(
                    state=ContainerState.TERMINATED,
                    failure=ContainerFailure(type=FailureType.CONTAINER_FAILED),
                ),
                None,
                FailureType.RESTORE_ERROR.value,
                True,
                NOT_REATTACHED,
            ),
        ],
    )
    def test_ended(
        self,
        the_ack: ContainerReattached | None,
        exit_code: int | None,
        failure: str | None,
        kill: bool,
        detail: str,
    ) -> None:
        plan = plan_reattach([placed()], [the_ack] if the_ack else [])
        assert plan.kept == ()
        (ended,) = plan.ended
        assert (ended.exit_code, ended.failure, ended.kill) == (exit_code, failure, kill)
        assert detail in ended.detail

    def test_a_reattach_failure_is_never_counted_as_the_users(self) -> None:
        assert FailureType.RESTORE_ERROR.value in TRANSIENT_FAILURES
        assert FailureType.AGENT_FAILED.value in TRANSIENT_FAILURES
        assert FailureType.CONTAINER_FAILED.value not in TRANSIENT_FAILURES

    def test_transient_failures_are_protocol_failure_types(self) -> None:
        assert TRANSIENT_FAILURES.issubset(f.value for f in FailureType)

    def test_acks_for_unlisted_containers_are_strays_unless_they_ended(self) -> None:
        plan = plan_reattach(
            [placed()],
            [ack(), ack("x.1-0"), ack("y.1-0", state=ContainerState.TERMINATED)],
        )
        assert plan.strays == ("x.1-0",)


class TestMismatch:
    devices = (Device(id=0, uuid="u0"), Device(id=1, uuid="u1"))

    def check(self, **kw):  # type: ignore[no-untyped-def]
        args = {
            "agent_id": "a1",
            "pool": "default",
            "devices": self.devices,
            "previous_pool": None,
            "previous_devices": None,
            "expected": [],
        }
        return mismatch(**{**args, **kw})

    def test_same_agent_back(self) -> None:
        assert self.check(previous_pool="default", previous_devices=self.devices[::-1]) is None

    def test_other_pool(self) -> None:
        why = self.check(previous_pool="gpu", previous_devices=self.devices)
        assert why is not None and "'gpu'" in why

    def test_other_devices(self) -> None:
        why = self.check(previous_pool="default", previous_devices=self.devices[:1])
        assert why is not None and "different devices" in why

    def test_after_a_master_restart_the_containers_must_fit(self) -> None:
        assert self.check(expected=[placed(devices=(1,))]) is None
        why = self.check(expected=[placed(devices=(2,))])
        assert why is not None and "[2]" in why
        other = PlacedContainer("t.1-0", "t.1", "a1", 0, "RUNNING", (0,), resource_pool="gpu")
        why = self.check(expected=[other])
        assert why is not None and "runs in pool 'gpu'" in why


def handle(agent_id: str, *, connected: bool, since: datetime | None = None) -> AgentHandle:
    h = AgentHandle(id=agent_id, resource_pool="default", devices=(), version="", registered_at=T0)
    h.connected = connected
    h.disconnected_at = since
    return h


class TestReconnectWait:
    @pytest.mark.parametrize(
        ("after", "lost"),
        [(timedelta(seconds=24), False), (WAIT, True), (timedelta(minutes=5), True)],
    )
    def test_a_disconnected_agent(self, after: timedelta, lost: bool) -> None:
        out = agents_past_reconnect_wait(
            [handle("a1", connected=False, since=T0)],
            ["a1"],
            now=T0 + after,
            master_started_at=T0 - timedelta(hours=1),
            wait=WAIT,
        )
        assert ("a1" in out) is lost
        if lost:
            assert "25s" in out["a1"]

    def test_connected_agents_are_never_lost(self) -> None:
        out = agents_past_reconnect_wait(
            [handle("a1", connected=True)],
            ["a1"],
            now=T0 + timedelta(days=1),
            master_started_at=T0,
            wait=WAIT,
        )
        assert out == {}

    def test_unknown_agents_with_work_wait_from_the_masters_start(self) -> None:
        early = agents_past_reconnect_wait(
            [], ["ghost"], now=T0 + timedelta(seconds=10), master_started_at=T0, wait=WAIT
        )
        assert early == {}
        late = agents_past_reconnect_wait(
            [], ["ghost"], now=T0 + WAIT, master_started_at=T0, wait=WAIT
        )
        assert "of the master's start" in late["ghost"]

    @pytest.mark.parametrize(
        ("known", "has_allocations", "uptime", "refused"),
        [
            (False, False, timedelta(minutes=1), True),
            (False, False, timedelta(seconds=5), False),
            (False, True, timedelta(hours=1), False),
            (True, False, timedelta(hours=1), False),
        ],
    )
    def test_reconnect_refusal(
        self, known: bool, has_allocations: bool, uptime: timedelta, refused: bool
    ) -> None:
        assert (
            refuses_reconnect(
                known=known,
                has_allocations=has_allocations,
                now=T0 + uptime,
                master_started_at=T0,
                wait=WAIT,
            )
            is refused
        )


class TestPreemptionTimeout:
    def test_default_and_configured(self) -> None:
        assert preemption_timeout({}) == timedelta(hours=1)
        assert preemption_timeout({"preemption_timeout": None}) == timedelta(hours=1)
        assert preemption_timeout({"preemption_timeout": 30}) == timedelta(seconds=30)

    @pytest.mark.parametrize(("after", "past"), [(29.9, False), (30, True), (31, True)])
    def test_deadline(self, after: float, past: bool) -> None:
        assert is_past_timeout(T0, timedelta(seconds=30), T0 + timedelta(seconds=after)) is past


def test_container_ids_follow_the_sorted_placement() -> None:
    out = containers_of("t.3", {"b": [1], "a": [0, 2]}, state="RUNNING")
    assert [(c.container_id, c.agent_id, c.device_ids) for c in out] == [
        ("t.3-0", "a", (0, 2)),
        ("t.3-1", "b", (1,)),
    ]
