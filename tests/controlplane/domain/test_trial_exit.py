"""What an allocation's end means for its trial (reference §4.8), as a table."""

from __future__ import annotations

import pytest

from controlplane.domain.states import RunState as S
from controlplane.domain.trial_exit import (
    AgentFate,
    AllocationExit,
    exit_signal,
    experiment_after_trials,
    restart_charge,
    trial_after_exit,
)

AGENT_LOST = "agent failed while container was running"
CONTAINER_FAILED = "container failed with non-zero exit code"
RESTARTED, HEALTHY = AgentFate.RESTARTED, AgentFate.HEALTHY
LOST, INTERRUPTED = AgentFate.LOST, AgentFate.INTERRUPTED

# Exit facts in (exit code, failure, what became of the agent, the master's own kill), whether
# the end uses up one of max_restarts out: only the user's code is charged.
CHARGES = [
    ("user code exits 1", 1, None, HEALTHY, False, True),
    (
        "user code exits 1 (reported as a container failure)",
        1,
        CONTAINER_FAILED,
        HEALTHY,
        False,
        True,
    ),
    ("OOM-killed on a healthy agent (137)", 137, None, HEALTHY, False, True),
    ("SIGKILL as a negative returncode, healthy agent", -9, None, HEALTHY, False, True),
    ("SIGTERM on a healthy agent", 143, None, HEALTHY, False, True),
    # Killed together with its agent, found dead by the agent's next start.
    ("SIGKILL with its agent (137)", 137, CONTAINER_FAILED, RESTARTED, False, False),
    ("SIGKILL with its agent (-9)", -9, CONTAINER_FAILED, RESTARTED, False, False),
    ("SIGTERM with its agent (a shutdown)", 143, CONTAINER_FAILED, RESTARTED, False, False),
    ("its own exit 1 while the agent was down", 1, CONTAINER_FAILED, RESTARTED, False, True),
    ("SIGSEGV while the agent was down", 139, CONTAINER_FAILED, RESTARTED, False, True),
    ("exit code 9 is not a signal", 9, CONTAINER_FAILED, RESTARTED, False, True),
    # The agent lost past its reconnect wait, or its machine interrupted.
    ("agent lost past its wait", None, AGENT_LOST, LOST, False, False),
    ("agent lost: AGENT_FAILED alone says so", None, AGENT_LOST, HEALTHY, False, False),
    ("exit 1 on an agent that was lost", 1, None, LOST, False, False),
    ("exit 143 after a spot interruption notice", 143, None, INTERRUPTED, False, False),
    ("exit 1 after a spot interruption notice", 1, None, INTERRUPTED, False, False),
    # The platform's own failures and kills.
    ("container not reattached", None, "container failed to restore", HEALTHY, False, False),
    (
        "launch failure (the config's fault)",
        None,
        "agent failed to launch the container",
        HEALTHY,
        False,
        True,
    ),
    ("the master's SIGKILL", 137, None, HEALTHY, True, False),
]


@pytest.mark.parametrize(
    ("exit_code", "failure", "agent", "killed", "counted"),
    [row[1:] for row in CHARGES],
    ids=[row[0] for row in CHARGES],
)
def test_restart_charge(
    exit_code: int | None, failure: str | None, agent: AgentFate, killed: bool, counted: bool
) -> None:
    charge = restart_charge(exit_code, failure, agent, killed=killed)
    assert charge.counted is counted
    assert charge.why


@pytest.mark.parametrize(
    ("code", "sig"),
    [(None, None), (0, None), (1, None), (128, None), (137, 9), (143, 15), (-9, 9), (-15, 15),
     (192, 64), (193, None), (255, None)],
)  # fmt: skip
def test_exit_signal(code: int | None, sig: int | None) -> None:
    assert exit_signal(code) == sig


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
        # SIGKILLed with its agent: re-queued from its checkpoint, even with max_restarts used up.
        (S.ACTIVE, AllocationExit(137, CONTAINER_FAILED, agent=RESTARTED), 5, None, False),
        (S.ACTIVE, AllocationExit(1, CONTAINER_FAILED, agent=RESTARTED), 5, S.ERROR, True),
        (S.ACTIVE, AllocationExit(143, agent=INTERRUPTED), 5, None, False),
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


def test_max_restarts_zero_survives_a_sigkill_with_its_agent() -> None:
    ended = AllocationExit(137, CONTAINER_FAILED, agent=RESTARTED)
    outcome = trial_after_exit(S.ACTIVE, ended, restarts=0, max_restarts=0)
    assert (outcome.target, outcome.count_restart) == (None, False)
    assert "SIGKILL together with its agent" in outcome.reason


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
