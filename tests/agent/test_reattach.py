"""The reattach plan and the filter on reports queued while disconnected (pure tables)."""

from __future__ import annotations

import pytest

from agent.protocol import (
    Container,
    ContainerLog,
    ContainerState,
    ContainerStateChanged,
    Device,
    FailureType,
    Heartbeat,
)
from agent.reattach import Observed, acked_states, exit_failure, keep_queued, plan_reattach

S = ContainerState
DEV = (Device(id=1, uuid="u1"),)


def listed(*ids: str) -> tuple[Container, ...]:
    return tuple(Container(id=i, state=S.RUNNING, devices=DEV) for i in ids)


class TestPlan:
    @pytest.mark.parametrize(
        ("listed_ids", "observed", "acks", "exited", "strays"),
        [
            # nothing anywhere
            ((), {}, [], (), ()),
            # running and listed: reattached as it is
            (("a",), {"a": Observed(S.RUNNING)}, [("a", S.RUNNING, None)], (), ()),
            # still launching: acked as STARTING
            (("a",), {"a": Observed(S.STARTING)}, [("a", S.STARTING, None)], (), ()),
            # exited 0 while away: TERMINATED without failure, exit reported afterwards
            (("a",), {"a": Observed(S.TERMINATED, 0)}, [("a", S.TERMINATED, None)], ("a",), ()),
            # exited 3: a container failure carrying the code
            (
                ("a",),
                {"a": Observed(S.TERMINATED, 3)},
                [("a", S.TERMINATED, FailureType.CONTAINER_FAILED)],
                ("a",),
                (),
            ),
            # listed but not here
            (("a",), {}, [("a", S.TERMINATED, FailureType.UNKNOWN_CONTAINER)], (), ()),
            # here but not listed: strays, running or not, sorted
            ((), {"b": Observed(S.RUNNING), "a": Observed(S.TERMINATED, 0)}, [], (), ("a", "b")),
            # a mix
            (
                ("a", "c"),
                {"a": Observed(S.RUNNING), "b": Observed(S.RUNNING)},
                [("a", S.RUNNING, None), ("c", S.TERMINATED, FailureType.UNKNOWN_CONTAINER)],
                (),
                ("b",),
            ),
        ],
    )
    def test_table(self, listed_ids, observed, acks, exited, strays):
        plan = plan_reattach(listed(*listed_ids), observed)
        got = [
            (a.container.id, a.container.state, a.failure.type if a.failure else None)
            for a in plan.acks
        ]
        assert got == acks
        assert plan.exited == exited
        assert plan.strays == strays

    def test_acks_carry_the_masters_devices(self):
        (ack,) = plan_reattach(listed("a"), {"a": Observed(S.RUNNING)}).acks
        assert ack.container.devices == DEV

    def test_a_failed_launch_keeps_its_own_failure(self):
        failure = exit_failure(None)
        assert failure is not None
        observed = {"a": Observed(S.TERMINATED, None, failure)}
        (ack,) = plan_reattach(listed("a"), observed).acks
        assert ack.failure == failure

    @pytest.mark.parametrize(("code", "failed"), [(0, False), (1, True), (137, True)])
    def test_exit_failure(self, code: int, failed: bool):
        failure = exit_failure(code)
        assert (failure is not None) == failed
        if failure is not None:
            assert failure.exit_code == code
            assert failure.type is FailureType.CONTAINER_FAILED
            assert not failure.agent_restarted

    def test_a_container_found_dead_at_start_says_so_in_its_ack(self):
        failure = exit_failure(137, agent_restarted=True)
        assert failure is not None and failure.agent_restarted and failure.exit_code == 137
        assert exit_failure(0, agent_restarted=True) is None  # a clean end is a clean end
        observed = {"a": Observed(S.TERMINATED, 137, failure)}
        (ack,) = plan_reattach(listed("a"), observed).acks
        assert ack.failure is not None and ack.failure.agent_restarted


def changed(cid: str, state: ContainerState) -> ContainerStateChanged:
    return ContainerStateChanged(container=Container(id=cid, state=state))


class TestQueuedFilter:
    ACKED = acked_states(
        plan_reattach(
            listed("run", "done", "gone"),
            {"run": Observed(S.RUNNING), "done": Observed(S.TERMINATED, 0)},
        ).acks
    )

    def test_unknown_containers_are_not_answered_for(self):
        assert self.ACKED == {"run": S.RUNNING, "done": S.TERMINATED}

    @pytest.mark.parametrize(
        ("message", "kept"),
        [
            (changed("run", S.STARTING), False),  # older than the ack
            (changed("run", S.RUNNING), False),  # the ack said it already
            (changed("run", S.TERMINATED), True),  # newer
            (changed("done", S.RUNNING), False),
            (changed("done", S.TERMINATED), True),  # carries the exit code
            (changed("stray", S.TERMINATED), False),  # the master does not want it
            (changed("gone", S.TERMINATED), False),
            (ContainerLog(container_id="run", timestamp=1.0, message="x"), True),
            (ContainerLog(container_id="stray", timestamp=1.0, message="x"), False),
            (Heartbeat(), False),
        ],
    )
    def test_table(self, message, kept: bool):
        assert keep_queued(message, self.ACKED) is kept
