"""What an allocation's end means for its trial (reference §4.8), as a table."""

from __future__ import annotations

import pytest

from controlplane.domain.states import RunState as S
from controlplane.domain.trial_exit import (
    AllocationExit,
    experiment_after_trials,
    trial_after_exit,
)

AGENT_LOST = "agent failed while container was running"


@pytest.mark.parametrize(
    ("state", "ended", "restarts", "target", "counted"),
    [
        (S.ACTIVE, AllocationExit(0), 0, S.COMPLETED, False),
        # Exit 0 after an acknowledged preemption: re-queued; without the ack: finished.
        (S.ACTIVE, AllocationExit(0, preempt_requested=True, preempt_acked=True), 0, None, False),
        (S.ACTIVE, AllocationExit(0, preempt_requested=True), 0, S.COMPLETED, False),
        (S.ACTIVE, AllocationExit(1), 0, None, True),
        (S.ACTIVE, AllocationExit(1), 4, None, True),
        (S.ACTIVE, AllocationExit(1), 5, S.ERROR, True),
        (S.ACTIVE, AllocationExit(137, preempt_requested=True), 0, None, True),
        (S.ACTIVE, AllocationExit(None, AGENT_LOST), 5, None, False),
        (S.ACTIVE, AllocationExit(None, "agent failed to launch the container"), 0, None, True),
        (S.ACTIVE, AllocationExit(None, "agent failed to launch the container"), 5, S.ERROR, True),
        (S.ACTIVE, AllocationExit(None, "container failed to restore"), 5, None, False),
        # Killed by the master (agent disabled, preemption timeout, stop before running).
        (S.ACTIVE, AllocationExit(137, killed=True), 5, None, False),
        (S.ACTIVE, AllocationExit(137, preempt_requested=True, killed=True), 0, None, False),
        (S.ACTIVE, AllocationExit(0, killed=True), 0, S.COMPLETED, False),
        (S.PAUSED, AllocationExit(137, preempt_requested=True, killed=True), 0, None, False),
        (S.STOPPING_KILLED, AllocationExit(None, AGENT_LOST), 0, S.CANCELED, False),
        (S.PAUSED, AllocationExit(0, preempt_requested=True), 0, None, False),
        (S.STOPPING_KILLED, AllocationExit(137), 0, S.CANCELED, False),
        (S.STOPPING_CANCELED, AllocationExit(0), 0, S.CANCELED, False),
        (S.STOPPING_COMPLETED, AllocationExit(0), 0, S.COMPLETED, False),
        (S.STOPPING_ERROR, AllocationExit(1), 0, S.ERROR, False),
    ],
)
def test_trial_after_exit(
    state: S, ended: AllocationExit, restarts: int, target: S | None, counted: bool
) -> None:
    outcome = trial_after_exit(state, ended, restarts=restarts, max_restarts=5)
    assert (outcome.target, outcome.count_restart) == (target, counted)
    assert outcome.reason


def test_max_restarts_zero_fails_on_the_first_error() -> None:
    outcome = trial_after_exit(S.ACTIVE, AllocationExit(2), restarts=0, max_restarts=0)
    assert outcome.target is S.ERROR and "max_restarts (0)" in outcome.reason


@pytest.mark.parametrize(
    ("state", "trials", "target"),
    [
        (S.ACTIVE, [S.COMPLETED, S.ACTIVE], None),
        (S.ACTIVE, [S.COMPLETED, S.ERROR], S.COMPLETED),
        (S.ACTIVE, [S.ERROR, S.ERROR], S.ERROR),
        (S.STOPPING_KILLED, [S.CANCELED], S.CANCELED),
        (S.STOPPING_CANCELED, [S.CANCELED, S.COMPLETED], S.CANCELED),
        (S.PAUSED, [S.COMPLETED], None),
        (S.ACTIVE, [], None),
    ],
)
def test_experiment_after_trials(state: S, trials: list[S], target: S | None) -> None:
    assert experiment_after_trials(state, trials) == target
