"""What an allocation's end means for its trial (reference §4.8, calculateExitStatus).

Pure: the trial's state, how the allocation ended and the restart budget in; the trial's next
state and whether a restart is counted out.
"""

from __future__ import annotations

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
    if ended.failure in TRANSIENT_FAILURES:
        return TrialOutcome(None, False, f"re-queued after a platform failure: {ended.failure}")
    clean = ended.exit_code == 0 and ended.failure is None
    if ended.killed and not clean:
        return TrialOutcome(None, False, "killed by the master; re-queued")
    if clean:
        if ended.preempt_acked:
            return TrialOutcome(None, False, "preempted; re-queued")
        if ended.preempt_requested:
            return TrialOutcome(S.COMPLETED, False, "exited 0 without acknowledging preemption")
        return TrialOutcome(S.COMPLETED, False, "exited 0 without a pending preemption")
    why = ended.failure or f"exit code {ended.exit_code}"
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
