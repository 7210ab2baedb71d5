"""What a searcher decides (operations) and what it is told (events).

The experiment (the I/O edge) turns operations into trials, preemptions and resumptions, and
feeds back what happened as events. Request ids come from the searcher's own counter, so a
search repeated with the same seed names its trials the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class Create:
    """Start a new trial with these hyperparameters and this trial seed (< 2**31)."""

    request_id: str
    hparams: dict[str, Any]
    seed: int


@dataclass(frozen=True)
class Stop:
    """Pause the trial gracefully after a checkpoint; it may later be `Promote`d.

    Only emitted when promotions are on. A paused trial is not closed: the experiment sends no
    `TrialClosed` for it until the searcher `Close`s it (or it ends on its own).
    """

    request_id: str


@dataclass(frozen=True)
class Close:
    """The searcher is done with the trial (Determined's Stop).

    If it is running, preempt it gracefully with the searcher as the reason; it ends COMPLETED
    and is never resumed. A paused trial is simply marked COMPLETED.
    """

    request_id: str


@dataclass(frozen=True)
class Promote:
    """Resume a paused trial from its latest checkpoint (its pause may still be in flight)."""

    request_id: str


@dataclass(frozen=True)
class Shutdown:
    """Every requested trial is closed: end the experiment.

    `cancel`: every trial was canceled by a user; `failure`: every trial errored. Otherwise the
    experiment completes.
    """

    cancel: bool = False
    failure: bool = False


Op = Create | Stop | Close | Promote | Shutdown

ExitReason = Literal["INVALID_HP", "ERRORED", "USER_CANCELED"]
EXIT_REASONS: tuple[str, ...] = ("INVALID_HP", "ERRORED", "USER_CANCELED")


@dataclass(frozen=True)
class TrialCreated:
    """The trial of a `Create` exists."""

    request_id: str


@dataclass(frozen=True)
class ValidationReported:
    """One validation report: the whole metrics dict (the searcher reads `searcher.metric` and,
    for ASHA, `time_metric`)."""

    request_id: str
    metrics: dict[str, Any]


@dataclass(frozen=True)
class TrialExitedEarly:
    """The trial ended before the searcher was done with it; a `TrialClosed` follows."""

    request_id: str
    reason: str


@dataclass(frozen=True)
class TrialClosed:
    """The trial reached a terminal state (COMPLETED, CANCELED or ERROR)."""

    request_id: str


@dataclass(frozen=True)
class TrialProgress:
    """The fraction (0..1) of its own length the trial has done."""

    request_id: str
    progress: float


Event = TrialCreated | ValidationReported | TrialExitedEarly | TrialClosed | TrialProgress
