"""What an allocation's end means for its trial (reference §4.8, calculateExitStatus).

Pure: the trial's state, how the allocation ended and the restart budget in; the trial's next
state and whether a restart is counted out.

A restart is charged only to the user's code (`restart_charge`, one table): an exit that comes
with the loss of its agent is the platform's, and the trial is re-queued from its latest
checkpoint without using up `max_restarts`. Determined already does so for an agent lost past
its reconnect wait; we also do for a task that died *with* its agent (the machine died, the OOM
killer or an operator took the agent and its tasks at once) and was found dead by the agent's
next start, and for an exit after the cloud announced the machine's interruption.
"""

from __future__ import annotations

import enum
import signal
from dataclasses import dataclass

from controlplane.domain.states import RunState

S = RunState

# Failures of the platform, not of the user's code: they never use up max_restarts.
# A container the agent cannot launch (its image does not exist, a mount source is missing) is
# *not* among them: that comes from the experiment's config, and re-queuing it for free would
# retry forever. Determined counts image pull failures the same way.
TRANSIENT_FAILURES = frozenset(
    {
        "agent failed while container was running",
        "container failed to restore",
        "task aborted",
        "container aborted",
    }
)


class AgentFate(enum.StrEnum):
    """What had become of the container's agent when its exit became known."""

    # Connected, it saw the exit and reported it (a disconnected agent that comes back within
    # its reconnect wait reports what it saw meanwhile the same way).
    HEALTHY = "healthy"
    # Gone past its reconnect wait, or back with other devices or another pool: the master
    # ended the allocation (AGENT_FAILED).
    LOST = "lost"
    # The agent process itself died (killed, its machine restarted), and the agent started
    # after it found the container already dead (agent/reattach.py marks such an exit).
    RESTARTED = "restarted"
    # Its cloud announced the machine's spot interruption (or GCE preemption) before the exit.
    INTERRUPTED = "interrupted"


# How a task dies when its machine or its agent's service goes down around it: SIGKILL (the
# machine, the OOM killer, a cgroup kill of the agent's unit) or SIGTERM (a shutdown).
DIED_WITH_THE_AGENT = frozenset({signal.SIGKILL, signal.SIGTERM})


def exit_signal(exit_code: int | None) -> int | None:
    """The signal an exit code says the process died of: -N (Python's returncode) or 128+N
    (shells, docker, our supervisor); None for a plain exit."""
    if exit_code is None:
        return None
    if -64 <= exit_code < 0:
        return -exit_code
    if 128 < exit_code <= 128 + 64:
        return exit_code - 128
    return None


@dataclass(frozen=True)
class Charge:
    counted: bool
    why: str


def restart_charge(
    exit_code: int | None, failure: str | None, agent: AgentFate, *, killed: bool = False
) -> Charge:
    """Whether an unclean end (not exit 0 without failure) uses up one of ``max_restarts``.

    | facts                                                         | counted |
    |---------------------------------------------------------------|---------|
    | the master itself sent the SIGKILL (``killed``)               | no      |
    | a platform failure (TRANSIENT_FAILURES: AGENT_FAILED, ...)    | no      |
    | the agent was lost                                            | no      |
    | the agent's machine was being interrupted                     | no      |
    | SIGKILL/SIGTERM, found by the agent's next start              | no      |
    | any other exit code found by the agent's next start           | yes     |
    | anything else on a healthy agent (exit 1, an OOM-killed 137)  | yes     |
    """
    if killed:
        return Charge(False, "killed by the master")
    if failure in TRANSIENT_FAILURES:
        return Charge(False, f"a platform failure: {failure}")
    if agent is AgentFate.LOST:
        return Charge(False, "its agent was lost")
    if agent is AgentFate.INTERRUPTED:
        return Charge(False, "its agent's machine was being interrupted")
    sig = exit_signal(exit_code)
    if agent is AgentFate.RESTARTED and sig in DIED_WITH_THE_AGENT:
        name = signal.Signals(sig).name
        return Charge(False, f"{name} together with its agent (found by the agent's restart)")
    return Charge(True, failure or f"exit code {exit_code}")


_STOPPING_TO_TERMINAL = {
    S.STOPPING_COMPLETED: S.COMPLETED,
    S.STOPPING_CANCELED: S.CANCELED,
    S.STOPPING_KILLED: S.CANCELED,
    S.STOPPING_ERROR: S.ERROR,
}


@dataclass(frozen=True)
class AllocationExit:
    """How an allocation ended.

    ``killed``: the master itself asked for the SIGKILL (an agent disabled without drain, a
    preemption past its timeout, a graceful stop of an allocation that was not running yet).
    Determined's `killedWhileRunning`: not the user's error, so no restart is counted.
    """

    exit_code: int | None
    failure: str | None = None
    preempt_requested: bool = False
    # The task acknowledged the preemption (its Core API does on the first should_preempt()
    # that says yes): how the master tells "stopped to be resumed later" from "finished".
    preempt_acked: bool = False
    killed: bool = False
    agent: AgentFate = AgentFate.HEALTHY

    def reason(self, detail: str = "") -> str:
        """The allocation's exit reason as stored and shown ("exit code 1", "killed by the
        master; ...", with the agent's detail after a colon)."""
        if self.failure:
            reason = self.failure
        elif self.exit_code is not None:
            reason = f"exit code {self.exit_code}"
        else:
            reason = "ended"
        if self.killed:
            reason = f"killed by the master; {reason}"
        return f"{reason}: {detail}" if detail else reason


@dataclass(frozen=True)
class TrialOutcome:
    """``target`` None: the trial keeps its state (an ACTIVE one is queued again)."""

    target: RunState | None
    count_restart: bool
    reason: str


def trial_after_exit(
    state: RunState, ended: AllocationExit, *, restarts: int, max_restarts: int
) -> TrialOutcome:
    if state in _STOPPING_TO_TERMINAL:
        return TrialOutcome(_STOPPING_TO_TERMINAL[state], False, f"stopped ({state.value})")
    if state is not S.ACTIVE:
        return TrialOutcome(None, False, f"allocation ended while the trial is {state.value}")
    clean = ended.exit_code == 0 and ended.failure is None
    if clean:
        if ended.preempt_acked:
            return TrialOutcome(None, False, "preempted; re-queued")
        if ended.preempt_requested:
            return TrialOutcome(S.COMPLETED, False, "exited 0 without acknowledging preemption")
        return TrialOutcome(S.COMPLETED, False, "exited 0 without a pending preemption")
    charge = restart_charge(ended.exit_code, ended.failure, ended.agent, killed=ended.killed)
    if not charge.counted:
        return TrialOutcome(None, False, f"{charge.why}; re-queued without a restart")
    why = charge.why
    if restarts + 1 > max_restarts:
        return TrialOutcome(S.ERROR, True, f"{why}; max_restarts ({max_restarts}) used up")
    return TrialOutcome(None, True, f"{why}; restart {restarts + 1} of {max_restarts}")


def experiment_after_trials(
    state: RunState, trial_states: list[RunState], *, searched: bool = False
) -> RunState | None:
    """The experiment's terminal state once every trial has ended; None while any runs.

    ``searched``: a searcher decides when an ACTIVE (or PAUSED) experiment is done (it shuts
    down, moving the experiment to STOPPING_*), not the moment its trials happen to have ended:
    between one trial's end and the next one's creation, none may be alive."""
    if not all(t.is_terminal for t in trial_states):
        return None
    if state in _STOPPING_TO_TERMINAL:
        return _STOPPING_TO_TERMINAL[state] if trial_states or searched else None
    if state is S.ACTIVE and trial_states and not searched:
        return S.ERROR if all(t is S.ERROR for t in trial_states) else S.COMPLETED
    return None
