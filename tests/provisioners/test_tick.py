"""plan_tick driven against the fake cloud: reference §2.10 P-up ... P-onefail.

`Driver.tick` does what the master's loop does each tick, synchronously: list, plan, terminate,
launch with a fresh request id, record the outcome. Time comes from a hand-moved clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from provisioners.base import InstanceState, LaunchFailure, LaunchFailureKind
from provisioners.launch_errors import LaunchError, LaunchErrorSettings, visible_error
from provisioners.scale_decider import DeciderSettings, TerminationReason
from provisioners.tick import (
    Decision,
    DecisionKind,
    ProvisioningSettings,
    TickPlan,
    TickSnapshot,
    TickState,
    plan_tick,
    record_launch,
)
from tests.support.fake_cloud import FakeCloud, FakeProvisioner

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
MS = timedelta(milliseconds=1)
SEC = timedelta(seconds=1)
MIN = timedelta(minutes=1)
HOUR = timedelta(hours=1)
NO_CAPACITY = LaunchFailure(LaunchFailureKind.CAPACITY, "InsufficientInstanceCapacity")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, by: timedelta) -> None:
        self.now += by


class Driver:
    """A synchronous stand-in for the master's provisioning loop."""

    def __init__(
        self, provisioner: FakeProvisioner, settings: ProvisioningSettings, clock: Clock
    ) -> None:
        self.provisioner = provisioner
        self.settings = settings
        self.clock = clock
        self.state = TickState()
        self.decisions: list[Decision] = []
        self._requests = 0

    def tick(
        self,
        agents: Mapping[str, bool] | None = None,
        desired: int = 0,
        pending_slots: Mapping[str, int] | None = None,
    ) -> TickPlan:
        now = self.clock()
        plan = plan_tick(
            TickSnapshot(
                now=now,
                instances=self.provisioner.list(),
                agents=agents or {},
                desired_new_instances=desired,
                settings=self.settings,
                state=self.state,
                pending_slots=pending_slots or {},
            )
        )
        self.state = plan.state
        self.decisions.extend(plan.decisions)
        self.provisioner.terminate(plan.terminate_ids)
        if plan.launch > 0:
            self._requests += 1
            ids: list[str] = []
            failure = None
            try:
                ids = self.provisioner.launch(plan.launch, request_id=f"req-{self._requests}")
            except LaunchFailure as exc:
                failure = exc
            self.state, decision = record_launch(
                self.state,
                self.settings,
                now,
                requested=plan.launch,
                instance_ids=ids,
                failure=failure,
            )
            self.decisions.append(decision)
        return plan

    def launch_error(self) -> LaunchError | None:
        return visible_error(self.state.launch_errors, self.settings.launch_errors, self.clock())


def make(
    clock: Clock, *, cloud_knobs: Mapping[str, object] | None = None, **decider: object
) -> tuple[FakeCloud, FakeProvisioner, Driver]:
    errors = decider.pop("launch_errors", LaunchErrorSettings())
    settings = ProvisioningSettings(
        decider=DeciderSettings(**decider),  # type: ignore[arg-type]
        launch_errors=errors,  # type: ignore[arg-type]
        slots_per_instance=4,
    )
    cloud = FakeCloud(clock, **(cloud_knobs or {}))  # type: ignore[arg-type]
    provisioner = FakeProvisioner(cloud, "p1", slots_per_instance=4)
    return cloud, provisioner, Driver(provisioner, settings, clock)


def ops(cloud: FakeCloud) -> list[tuple[str, int]]:
    return [(c.op, c.count) for c in cloud.calls]


@pytest.fixture
def clock() -> Clock:
    return Clock()


class TestScenarios:
    def test_p_up_empty_cluster_launches_demand(self, clock: Clock) -> None:
        cloud, _, driver = make(clock, max_instances=100)
        plan = driver.tick(desired=4)
        assert ops(cloud) == [("list", 0), ("launch", 4)]
        assert plan.launch == 4
        assert [d.kind for d in plan.decisions] == [DecisionKind.LAUNCH]

    def test_p_max_launch_capped(self, clock: Clock) -> None:
        cloud, _, driver = make(clock, max_instances=1)
        driver.tick(desired=3)
        assert [c.count for c in cloud.calls_of("launch")] == [1]
        assert "capped by max_instances" in driver.decisions[0].reason

    def test_p_down_idle_instances_terminated(self, clock: Clock) -> None:
        cloud, provisioner, driver = make(clock, max_idle_agent_period=50 * MS)
        ids = [cloud.add_instance(provisioner.tags) for _ in range(2)]
        idle = dict.fromkeys(ids, True)
        driver.tick(idle)
        clock.advance(100 * MS)
        plan = driver.tick(idle)
        assert [c.op for c in cloud.calls] == ["list", "list", "terminate"]
        assert set(cloud.calls_of("terminate")[0].ids) == set(ids)
        assert {t.reason for t in plan.terminate} == {TerminationReason.LONG_IDLE}
        assert cloud.live_count() == 0

    @pytest.mark.parametrize("list_lag", [0, 3])
    def test_p_noextra_no_launch_while_starting(self, clock: Clock, list_lag: int) -> None:
        cloud, provisioner, driver = make(
            clock,
            cloud_knobs={"list_lag": list_lag},
            max_agent_starting_period=HOUR,
            max_idle_agent_period=HOUR,
            max_instances=10,
        )
        ids = [cloud.add_instance(provisioner.tags) for _ in range(2)]
        agents = dict.fromkeys(ids, True) | {"not-one-of-ours": True}
        for _ in range(4):
            driver.tick(agents, desired=2)
            clock.advance(5 * SEC)
        assert [c.count for c in cloud.calls_of("launch")] == [2]
        assert not cloud.calls_of("terminate")

    def test_p_disc_only_the_old_unconnected_instance_goes(self, clock: Clock) -> None:
        cloud, provisioner, driver = make(
            clock, max_disconnect_period=50 * MS, max_agent_starting_period=3 * MIN
        )
        old = cloud.add_instance(provisioner.tags, launch_time=T0 - HOUR)
        cloud.add_instance(provisioner.tags, launch_time=T0 - MIN)
        assert not driver.tick().terminate
        clock.advance(100 * MS)
        plan = driver.tick()
        assert plan.terminate_ids == [old]
        assert plan.terminate[0].reason is TerminationReason.LONG_DISCONNECTED

    def test_p_fail_error_after_one_tick(self, clock: Clock) -> None:
        cloud, _, driver = make(clock, launch_errors=LaunchErrorSettings(timeout=5 * SEC))
        cloud.fail_every_launch(NO_CAPACITY)
        driver.tick(desired=1)
        error = driver.launch_error()
        assert error is not None
        assert error.kind is LaunchFailureKind.CAPACITY
        assert driver.decisions[-1].kind is DecisionKind.LAUNCH_FAILED

        clock.advance(SEC)
        plan = driver.tick(desired=1, pending_slots={"small": 4, "big": 8})
        assert plan.launch == 0
        assert plan.launch_error == error
        assert plan.prune == ("small", "big")  # no instance listed: nothing can run
        assert [d.kind for d in plan.decisions] == [DecisionKind.LAUNCH_SKIPPED, DecisionKind.PRUNE]
        assert len(cloud.calls_of("launch")) == 1

        clock.advance(5 * SEC)
        cloud.fail_every_launch(None)
        plan = driver.tick(desired=1)
        assert plan.launch == 1
        assert driver.launch_error() is None
        assert cloud.live_count() == 1

    def test_p_one_partial_launches_are_no_error(self, clock: Clock) -> None:
        knobs = LaunchErrorSettings(timeout=MIN, retries=4)
        cloud, _provisioner, driver = make(
            clock, cloud_knobs={"launch_cap": 1}, max_instances=4, launch_errors=knobs
        )
        for _ in range(6):
            driver.tick(desired=4)
            clock.advance(5 * SEC)
        assert driver.launch_error() is None
        assert cloud.live_count() == 4
        assert [c.count for c in cloud.calls_of("launch")] == [4, 3, 2, 1]

        driver.settings = replace(driver.settings, decider=DeciderSettings(max_instances=3))
        plan = driver.tick(desired=4)
        assert [t.reason for t in plan.terminate] == [TerminationReason.OVER_MAXIMUM]
        assert plan.launch == 0
        assert driver.launch_error() is None
        assert cloud.live_count() == 3

    def test_p_onefail_error_after_retries(self, clock: Clock) -> None:
        knobs = LaunchErrorSettings(timeout=MIN, retries=4)
        cloud, _, driver = make(
            clock, cloud_knobs={"launch_cap": 1}, max_instances=4, launch_errors=knobs
        )
        cloud.fail_every_launch(NO_CAPACITY)
        for n in range(5):
            assert driver.launch_error() is None, f"tick {n}"
            driver.tick(desired=4)
            clock.advance(5 * SEC)
        assert driver.launch_error() is not None
        assert len(cloud.calls_of("launch")) == 5


class TestDecisions:
    def test_minimum_with_no_demand(self, clock: Clock) -> None:
        _, _, driver = make(clock, min_instances=2)
        plan = driver.tick()
        assert plan.launch == 2
        assert "min_instances" in plan.decisions[0].reason

    def test_at_maximum_is_explained(self, clock: Clock) -> None:
        cloud, provisioner, driver = make(clock, max_instances=1)
        busy = cloud.add_instance(provisioner.tags)
        plan = driver.tick({busy: False}, desired=3)
        assert plan.launch == 0
        assert [(d.kind, d.count) for d in plan.decisions] == [(DecisionKind.AT_MAXIMUM, 3)]

    def test_terminations_grouped_by_reason(self, clock: Clock) -> None:
        cloud, provisioner, driver = make(clock)
        stopped = cloud.add_instance(provisioner.tags, state=InstanceState.STOPPED)
        plan = driver.tick()
        (decision,) = plan.decisions
        assert (decision.kind, decision.reason, decision.instance_ids) == (
            DecisionKind.TERMINATE,
            "stopped",
            (stopped,),
        )
        assert decision.message == f"terminate 1: stopped: {stopped}"

    def test_instance_problems_are_reported(self, clock: Clock) -> None:
        cloud, provisioner, driver = make(clock)
        sir = cloud.add_instance(provisioner.tags, state=InstanceState.SPOT_REQUEST_PENDING)
        cloud.set_problem(sir, "capacity-not-available")
        plan = driver.tick()
        assert [(d.kind, d.reason) for d in plan.decisions] == [
            (DecisionKind.INSTANCE_PROBLEM, "capacity-not-available")
        ]

    def test_launch_giving_nothing_counts_as_failure(self, clock: Clock) -> None:
        _cloud, _, driver = make(
            clock, cloud_knobs={"launch_cap": 0}, launch_errors=LaunchErrorSettings(timeout=MIN)
        )
        driver.tick(desired=1)
        assert driver.decisions[-1].kind is DecisionKind.LAUNCH_FAILED
        assert driver.launch_error() is not None

    def test_quiet_tick_has_no_decisions(self, clock: Clock) -> None:
        cloud, provisioner, driver = make(clock)
        busy = cloud.add_instance(provisioner.tags)
        assert driver.tick({busy: False}).decisions == ()


class TestRestart:
    def test_state_survives_json_between_ticks(self, clock: Clock) -> None:
        cloud, provisioner, driver = make(
            clock,
            max_idle_agent_period=MIN,
            launch_errors=LaunchErrorSettings(timeout=MIN),
        )
        idle = cloud.add_instance(provisioner.tags)
        cloud.fail_next_launch(NO_CAPACITY)
        driver.tick({idle: True}, desired=1)
        driver.state = TickState.from_json(driver.state.to_json())
        assert driver.launch_error() is not None
        clock.advance(2 * MIN)
        plan = driver.tick({idle: True})
        assert plan.terminate_ids == [idle]

    def test_lagging_launch_is_not_repeated_after_reload(self, clock: Clock) -> None:
        cloud, _, driver = make(clock, cloud_knobs={"list_lag": 5}, max_instances=5)
        driver.tick(desired=2)
        for _ in range(3):
            driver.state = TickState.from_json(driver.state.to_json())
            clock.advance(5 * SEC)
            assert driver.tick(desired=2).launch == 0
        assert len(cloud.calls_of("launch")) == 1
