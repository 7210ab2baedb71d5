"""The scale decider: reference §2.10 scenarios S1-S8 as tables, invariants with hypothesis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioners.base import Instance, InstanceState
from provisioners.scale_decider import (
    DeciderMemory,
    DeciderSettings,
    ScalingPlan,
    ScalingSnapshot,
    TerminationReason,
    decide_scaling,
    memory_from_json,
    memory_to_json,
    remember_launch,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
HOUR = timedelta(hours=1)
TEN_MIN = timedelta(minutes=10)
RUNNING = InstanceState.RUNNING


def inst(iid: str, state: InstanceState = RUNNING, age: timedelta = HOUR) -> Instance:
    return Instance(id=iid, agent_name=iid, state=state, launch_time=NOW - age)


def decide(
    instances: list[Instance],
    agents: dict[str, bool] | None = None,
    *,
    desired: int = 0,
    memory: DeciderMemory | None = None,
    now: datetime = NOW,
    **knobs: object,
) -> ScalingPlan:
    return decide_scaling(
        ScalingSnapshot(
            now=now,
            instances=instances,
            agents=agents or {},
            desired_new_instances=desired,
            settings=DeciderSettings(**knobs),  # type: ignore[arg-type]
            memory=memory or DeciderMemory(),
        )
    )


def reasons(plan: ScalingPlan) -> dict[str, TerminationReason]:
    return {t.instance_id: t.reason for t in plan.terminate}


class TestClassification:
    def test_s1_instance_states(self) -> None:
        periods = {
            "max_idle_agent_period": TEN_MIN,
            "max_agent_starting_period": TEN_MIN,
            "max_disconnect_period": TEN_MIN,
            "max_instances": 20,
        }
        instances = [
            inst("stopped", InstanceState.STOPPED),
            inst("unconnected-1", age=MIN),
            inst("unconnected-2", age=MIN),
            inst("past-disconnected"),
            inst("new-disconnected"),
            inst("long-disconnected"),
            inst("past-idle"),
            inst("new-idle"),
            inst("long-idle"),
            inst("occupied"),
        ]
        agents = {
            "past-disconnected": False,
            "past-idle": False,
            "new-idle": True,
            "long-idle": True,
            "occupied": False,
        }
        memory = DeciderMemory(
            idle_since={"past-idle": NOW - HOUR, "long-idle": NOW - HOUR},
            disconnected_since={
                "past-disconnected": NOW - HOUR,
                "long-disconnected": NOW - HOUR,
            },
        )
        c = decide(instances, agents, memory=memory, **periods).classes
        assert c.disconnected == {"new-disconnected": NOW, "long-disconnected": NOW - HOUR}
        assert c.idle == {"new-idle": NOW, "long-idle": NOW - HOUR}
        assert c.long_disconnected == {"long-disconnected"}
        assert c.long_idle == {"long-idle"}
        assert c.stopped == {"stopped"}
        assert c.recently_launched == {"unconnected-1", "unconnected-2"}
        assert set(c.counted) == {i.id for i in instances} - {"stopped"}

    @pytest.mark.parametrize(
        ("state", "counted", "ignored"),
        [
            (InstanceState.SPOT_REQUEST_PENDING, True, False),
            (InstanceState.STARTING, True, False),
            (InstanceState.RUNNING, True, False),
            (InstanceState.STOPPED, False, False),
            (InstanceState.STOPPING, False, True),
            (InstanceState.TERMINATING, False, True),
            (InstanceState.UNKNOWN, False, True),
        ],
    )
    def test_states_that_count(self, state: InstanceState, counted: bool, ignored: bool) -> None:
        c = decide([inst("a", state)]).classes
        assert ("a" in c.counted) is counted
        assert ("a" in c.ignored) is ignored

    def test_pending_spot_request_is_recently_launched_whatever_its_age(self) -> None:
        c = decide([inst("sir-1", InstanceState.SPOT_REQUEST_PENDING, age=10 * HOUR)]).classes
        assert c.pending == {"sir-1"}
        assert c.recently_launched == {"sir-1"}

    def test_agent_matches_by_agent_name_not_id(self) -> None:
        instance = Instance("sir-9", "i-9", RUNNING, NOW - HOUR)
        c = decide([instance], {"i-9": True}).classes
        assert c.idle == {"sir-9": NOW}

    def test_starting_period_boundary_is_exclusive(self) -> None:
        c = decide([inst("a", age=TEN_MIN)], max_agent_starting_period=TEN_MIN).classes
        assert c.disconnected == {"a": NOW}
        assert not c.recently_launched


class TestMemory:
    def test_busy_agent_resets_its_idle_timer(self) -> None:
        first = decide([inst("a")], {"a": True})
        second = decide([inst("a")], {"a": False}, memory=first.memory, now=NOW + MIN)
        third = decide([inst("a")], {"a": True}, memory=second.memory, now=NOW + 2 * MIN)
        assert third.classes.idle == {"a": NOW + 2 * MIN}

    def test_idle_becomes_long_idle_after_the_period(self) -> None:
        period = {"max_idle_agent_period": TEN_MIN}
        first = decide([inst("a")], {"a": True}, **period)
        at_edge = decide([inst("a")], {"a": True}, memory=first.memory, now=NOW + TEN_MIN, **period)
        assert not at_edge.terminate
        after = decide(
            [inst("a")], {"a": True}, memory=at_edge.memory, now=NOW + TEN_MIN + MIN, **period
        )
        assert reasons(after) == {"a": TerminationReason.LONG_IDLE}

    def test_vanished_instances_are_forgotten(self) -> None:
        first = decide([inst("a"), inst("b")], {"a": True})
        second = decide([inst("b")], {}, memory=first.memory)
        assert set(second.memory.last_state) == {"b"}
        assert "a" not in second.memory.idle_since

    def test_state_since_changes_only_with_the_state(self) -> None:
        first = decide([inst("a", InstanceState.STARTING)])
        same = decide([inst("a", InstanceState.STARTING)], memory=first.memory, now=NOW + MIN)
        moved = decide([inst("a")], memory=same.memory, now=NOW + 2 * MIN)
        assert same.memory.state_since == {"a": NOW}
        assert moved.memory.state_since == {"a": NOW + 2 * MIN}
        assert moved.memory.last_state == {"a": RUNNING}

    def test_unlisted_launch_counts_until_listed(self) -> None:
        memory = remember_launch(DeciderMemory(), ["i-new"], NOW)
        lagging = decide([], desired=1, memory=memory, now=NOW + MIN)
        assert lagging.launch == 0
        assert lagging.classes.unlisted == {"i-new"}
        listed = decide([inst("i-new", age=MIN)], desired=1, memory=lagging.memory)
        assert listed.memory.unlisted_launches == {}
        assert listed.classes.recently_launched == {"i-new"}

    def test_unlisted_launch_expires_after_the_starting_period(self) -> None:
        memory = remember_launch(DeciderMemory(), ["i-lost"], NOW - HOUR)
        plan = decide([], desired=1, memory=memory)
        assert plan.launch == 1
        assert plan.memory.unlisted_launches == {}

    def test_json_round_trip(self) -> None:
        plan = decide(
            [inst("a"), inst("b", InstanceState.SPOT_REQUEST_PENDING), inst("c")], {"a": True}
        )
        memory = remember_launch(plan.memory, ["i-x"], NOW)
        assert memory_from_json(memory_to_json(memory)) == memory

    def test_json_unknown_state_reads_as_unknown(self) -> None:
        memory = memory_from_json({"last_state": {"a": "Hibernating"}})
        assert memory.last_state == {"a": InstanceState.UNKNOWN}


class TestTermination:
    @pytest.mark.parametrize(
        ("instance", "agents", "memory", "reason"),
        [
            (inst("s", InstanceState.STOPPED), {}, DeciderMemory(), TerminationReason.STOPPED),
            (
                inst("i"),
                {"i": True},
                DeciderMemory(idle_since={"i": NOW - HOUR}),
                TerminationReason.LONG_IDLE,
            ),
            (
                inst("d"),
                {},
                DeciderMemory(disconnected_since={"d": NOW - HOUR}),
                TerminationReason.LONG_DISCONNECTED,
            ),
        ],
        ids=["stopped", "long-idle", "long-disconnected"],
    )
    def test_s2_each_is_terminated(
        self,
        instance: Instance,
        agents: dict[str, bool],
        memory: DeciderMemory,
        reason: TerminationReason,
    ) -> None:
        plan = decide([instance], agents, memory=memory, max_instances=10)
        assert reasons(plan) == {instance.id: reason}

    def test_s3_over_maximum(self) -> None:
        instances = [
            inst("earliest", age=HOUR),
            inst("most-recent", age=MIN),
            inst("new-idle", age=30 * MIN),
            inst("long-idle", age=40 * MIN),
        ]
        agents = {"earliest": False, "most-recent": False, "new-idle": True, "long-idle": True}
        memory = DeciderMemory(idle_since={"long-idle": NOW - HOUR})
        plan = decide(instances, agents, memory=memory, max_instances=1, max_idle_agent_period=MIN)
        assert reasons(plan) == {
            "long-idle": TerminationReason.LONG_IDLE,
            "new-idle": TerminationReason.OVER_MAXIMUM,
            "most-recent": TerminationReason.OVER_MAXIMUM,
        }

    def test_s4_long_idle_kept_to_respect_minimum(self) -> None:
        busy = [inst(f"busy-{n}") for n in range(5)]
        instances = [
            *busy,
            inst("stopped", InstanceState.STOPPED),
            inst("long-idle"),
            inst("long-disconnected"),
        ]
        agents = {i.id: False for i in busy} | {"long-idle": True}
        memory = DeciderMemory(
            idle_since={"long-idle": NOW - HOUR},
            disconnected_since={"long-disconnected": NOW - HOUR},
        )
        plan = decide(instances, agents, memory=memory, min_instances=6, max_instances=10)
        assert reasons(plan) == {
            "stopped": TerminationReason.STOPPED,
            "long-disconnected": TerminationReason.LONG_DISCONNECTED,
        }

    def test_long_idle_oldest_first_down_to_minimum(self) -> None:
        instances = [inst(n) for n in ("a", "b", "c")]
        memory = DeciderMemory(
            idle_since={"a": NOW - HOUR, "b": NOW - 3 * HOUR, "c": NOW - 2 * HOUR}
        )
        plan = decide(instances, dict.fromkeys("abc", True), memory=memory, min_instances=1)
        assert plan.terminate_ids == ["b", "c"]

    def test_over_maximum_order_pending_idle_disconnected_newest(self) -> None:
        instances = [
            inst("old-busy", age=3 * HOUR),
            inst("new-busy", age=2 * HOUR),
            inst("disc", age=HOUR),
            inst("idle", age=4 * HOUR),
            inst("sir-1", InstanceState.SPOT_REQUEST_PENDING, age=MIN),
        ]
        agents = {"old-busy": False, "new-busy": False, "idle": True}
        order = ["sir-1", "idle", "disc", "new-busy", "old-busy"]
        for keep in range(5, -1, -1):
            plan = decide(instances, agents, max_instances=keep)
            assert plan.terminate_ids == order[: 5 - keep]
            assert {t.reason for t in plan.terminate} <= {TerminationReason.OVER_MAXIMUM}

    def test_chosen_unlisted_launch_is_forgotten(self) -> None:
        memory = remember_launch(DeciderMemory(), ["i-new"], NOW)
        plan = decide([inst("a")], {"a": False}, memory=memory, max_instances=1)
        assert plan.terminate_ids == ["i-new"]
        assert plan.memory.unlisted_launches == {}


class TestLaunchCount:
    @pytest.mark.parametrize(
        ("name", "busy", "recent", "desired", "min_instances", "max_instances", "expected"),
        [
            ("S5 minimum with no instances", 0, 0, 1, 1, 10, 1),
            ("S6 capped at maximum", 1, 0, 4, 0, 2, 1),
            ("S7 recently launched subtracted", 1, 1, 4, 0, 10, 3),
            ("S8 enough already starting", 0, 2, 1, 0, 5, 0),
            ("minimum with no demand", 1, 0, 0, 3, 5, 2),
            ("minimum beats starting ones", 0, 2, 0, 3, 5, 1),
            ("at maximum", 5, 0, 3, 0, 5, 0),
            ("over maximum", 6, 0, 3, 0, 5, 0),
            ("no demand", 2, 0, 0, 0, 5, 0),
        ],
    )
    def test_scenarios(
        self,
        name: str,
        busy: int,
        recent: int,
        desired: int,
        min_instances: int,
        max_instances: int,
        expected: int,
    ) -> None:
        instances = [inst(f"busy-{n}") for n in range(busy)]
        instances += [inst(f"new-{n}", age=MIN) for n in range(recent)]
        agents = {f"busy-{n}": False for n in range(busy)}
        plan = decide(
            instances,
            agents,
            desired=desired,
            min_instances=min_instances,
            max_instances=max_instances,
        )
        assert plan.launch == expected, name


class TestSettings:
    @pytest.mark.parametrize(
        "knobs",
        [
            {"min_instances": -1},
            {"min_instances": 3, "max_instances": 2},
            {"max_idle_agent_period": -MIN},
        ],
    )
    def test_invalid(self, knobs: dict[str, object]) -> None:
        with pytest.raises(ValueError):
            DeciderSettings(**knobs)  # type: ignore[arg-type]


# -- invariants ----------------------------------------------------------------------------------

_STATES = st.sampled_from(list(InstanceState))
_AGENT = st.sampled_from([None, True, False])
_OFFSET = st.integers(min_value=0, max_value=180).map(lambda m: timedelta(minutes=m))
_PERIOD = st.sampled_from([timedelta(0), MIN, TEN_MIN, HOUR])


@st.composite
def snapshots(draw: st.DrawFn) -> ScalingSnapshot:
    count = draw(st.integers(min_value=0, max_value=14))
    instances: list[Instance] = []
    agents: dict[str, bool] = {}
    idle_since: dict[str, datetime] = {}
    disconnected_since: dict[str, datetime] = {}
    for n in range(count):
        iid = f"i-{n}"
        instances.append(Instance(iid, iid, draw(_STATES), NOW - draw(_OFFSET)))
        agent = draw(_AGENT)
        if agent is not None:
            agents[iid] = agent
        if draw(st.booleans()):
            idle_since[iid] = NOW - draw(_OFFSET)
        if draw(st.booleans()):
            disconnected_since[iid] = NOW - draw(_OFFSET)
    for n in range(draw(st.integers(min_value=0, max_value=2))):
        agents[f"stranger-{n}"] = draw(st.booleans())
    unlisted = {f"u-{n}": NOW - draw(_OFFSET) for n in range(draw(st.integers(0, 2)))}
    low = draw(st.integers(min_value=0, max_value=6))
    return ScalingSnapshot(
        now=NOW,
        instances=instances,
        agents=agents,
        desired_new_instances=draw(st.integers(min_value=0, max_value=12)),
        settings=DeciderSettings(
            min_instances=low,
            max_instances=draw(st.integers(min_value=max(low, 1), max_value=10)),
            max_idle_agent_period=draw(_PERIOD),
            max_agent_starting_period=draw(_PERIOD),
            max_disconnect_period=draw(_PERIOD),
        ),
        memory=DeciderMemory(
            idle_since=idle_since,
            disconnected_since=disconnected_since,
            unlisted_launches=unlisted,
        ),
    )


def _remaining(plan: ScalingPlan) -> int:
    return len(plan.classes.counted) - sum(
        1 for t in plan.terminate if t.instance_id in plan.classes.counted
    )


class TestInvariants:
    @settings(max_examples=200, deadline=None)
    @given(snapshots())
    def test_never_above_maximum(self, snapshot: ScalingSnapshot) -> None:
        plan = decide_scaling(snapshot)
        assert plan.launch >= 0
        assert _remaining(plan) + plan.launch <= snapshot.settings.max_instances

    @settings(max_examples=200, deadline=None)
    @given(snapshots())
    def test_idle_terminations_respect_minimum(self, snapshot: ScalingSnapshot) -> None:
        plan = decide_scaling(snapshot)
        idle_or_disconnected = {
            TerminationReason.LONG_IDLE,
            TerminationReason.LONG_DISCONNECTED,
        }
        if any(t.reason is TerminationReason.LONG_IDLE for t in plan.terminate):
            gone = sum(1 for t in plan.terminate if t.reason in idle_or_disconnected)
            assert len(plan.classes.counted) - gone >= snapshot.settings.min_instances

    @settings(max_examples=200, deadline=None)
    @given(snapshots())
    def test_minimum_is_reached_when_allowed(self, snapshot: ScalingSnapshot) -> None:
        plan = decide_scaling(snapshot)
        if not plan.terminate:
            assert len(plan.classes.counted) + plan.launch >= snapshot.settings.min_instances

    @settings(max_examples=200, deadline=None)
    @given(snapshots())
    def test_terminations_are_unique_and_known(self, snapshot: ScalingSnapshot) -> None:
        plan = decide_scaling(snapshot)
        ids = plan.terminate_ids
        assert len(ids) == len(set(ids))
        known = set(plan.classes.counted) | plan.classes.stopped
        assert set(ids) <= known
        assert plan.classes.stopped | plan.classes.long_disconnected <= set(ids)
        assert not set(ids) & plan.classes.ignored

    @settings(max_examples=200, deadline=None)
    @given(snapshots(), st.data())
    def test_deterministic_whatever_the_order(
        self, snapshot: ScalingSnapshot, data: st.DataObject
    ) -> None:
        shuffled = ScalingSnapshot(
            now=snapshot.now,
            instances=data.draw(st.permutations(list(snapshot.instances))),
            agents=dict(reversed(list(snapshot.agents.items()))),
            desired_new_instances=snapshot.desired_new_instances,
            settings=snapshot.settings,
            memory=snapshot.memory,
        )
        assert decide_scaling(snapshot) == decide_scaling(snapshot)
        assert decide_scaling(shuffled) == decide_scaling(snapshot)

    @settings(max_examples=100, deadline=None)
    @given(snapshots())
    def test_memory_survives_json(self, snapshot: ScalingSnapshot) -> None:
        memory = decide_scaling(snapshot).memory
        assert memory_from_json(memory_to_json(memory)) == memory
