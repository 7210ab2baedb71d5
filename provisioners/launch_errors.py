"""The sticky launch error and the task pruning it allows (reference §2.4).

A launch failure counts toward a streak when the previous one is less than `timeout` old;
otherwise the streak restarts at 1. Once the streak is longer than `retries`, the error is
visible until `timeout` after the last failure, and while it is visible the provisioner skips
launches and the pool may reject requests the listed instances can never hold. A success ends
the streak. With a timeout of 0 the error is never visible (Determined's default).

The state is immutable: each function takes a state and returns the next one, `now` passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from provisioners.base import LaunchFailure, LaunchFailureKind


@dataclass(frozen=True)
class LaunchErrorSettings:
    """`launch_error_timeout` and `launch_error_retries` of the provider config."""

    timeout: timedelta = timedelta(0)
    retries: int = 0

    def __post_init__(self) -> None:
        if self.timeout < timedelta(0):
            raise ValueError("launch_error_timeout must not be negative")
        if self.retries < 0:
            raise ValueError("launch_error_retries must be >= 0")


@dataclass(frozen=True)
class LaunchErrorState:
    """The current streak of launch failures and the last one's details."""

    failures: int = 0
    last_failure_at: datetime | None = None
    kind: LaunchFailureKind | None = None
    message: str | None = None


@dataclass(frozen=True)
class LaunchError:
    """A visible sticky error, as the pool and `det resource-pool describe` show it."""

    kind: LaunchFailureKind | None
    message: str
    failures: int
    last_failure_at: datetime
    visible_until: datetime


def record_failure(
    state: LaunchErrorState,
    settings: LaunchErrorSettings,
    now: datetime,
    failure: LaunchFailure | str,
) -> LaunchErrorState:
    """The state after a launch failed at `now`."""
    last = state.last_failure_at
    within = last is not None and now - last < settings.timeout
    kind = failure.kind if isinstance(failure, LaunchFailure) else None
    message = failure.message if isinstance(failure, LaunchFailure) else failure
    return LaunchErrorState(
        failures=state.failures + 1 if within else 1,
        last_failure_at=now,
        kind=kind,
        message=message,
    )


def record_success(state: LaunchErrorState) -> LaunchErrorState:
    """The state after a launch succeeded (even partly): no streak, no error."""
    return LaunchErrorState()


def visible_error(
    state: LaunchErrorState, settings: LaunchErrorSettings, now: datetime
) -> LaunchError | None:
    """The sticky error if it is visible at `now`, else None."""
    last = state.last_failure_at
    if last is None or settings.timeout <= timedelta(0) or state.failures <= settings.retries:
        return None
    until = last + settings.timeout
    if now >= until:
        return None
    return LaunchError(
        kind=state.kind,
        message=state.message or "",
        failures=state.failures,
        last_failure_at=last,
        visible_until=until,
    )


def unschedulable_requests(
    pending_slots: Mapping[str, int], *, listed_instances: int, slots_per_instance: int
) -> tuple[str, ...]:
    """Requests needing more slots than all listed instances together give, in input order.

    Only meaningful while the sticky error is visible: no new instance will come to help.
    """
    capacity = max(0, listed_instances) * max(0, slots_per_instance)
    return tuple(rid for rid, slots in pending_slots.items() if slots > capacity)


def requests_to_prune(
    state: LaunchErrorState,
    settings: LaunchErrorSettings,
    now: datetime,
    pending_slots: Mapping[str, int],
    *,
    listed_instances: int,
    slots_per_instance: int,
) -> tuple[str, ...]:
    """`unschedulable_requests` while the error is visible at `now`, else nothing."""
    if visible_error(state, settings, now) is None:
        return ()
    return unschedulable_requests(
        pending_slots, listed_instances=listed_instances, slots_per_instance=slots_per_instance
    )


def state_to_json(state: LaunchErrorState) -> dict[str, object]:
    """The state as a JSON-ready dict, for the master's DB."""
    at = state.last_failure_at
    return {
        "failures": state.failures,
        "last_failure_at": at.isoformat() if at is not None else None,
        "kind": state.kind.value if state.kind is not None else None,
        "message": state.message,
    }


def state_from_json(data: Mapping[str, object]) -> LaunchErrorState:
    """The inverse of `state_to_json`; an unknown kind reads as None."""
    at, kind, message = data.get("last_failure_at"), data.get("kind"), data.get("message")
    failures = data.get("failures", 0)
    return LaunchErrorState(
        failures=failures if isinstance(failures, int) else 0,
        last_failure_at=datetime.fromisoformat(at) if isinstance(at, str) else None,
        kind=_kind(kind) if isinstance(kind, str) else None,
        message=message if isinstance(message, str) else None,
    )


def _kind(value: str) -> LaunchFailureKind | None:
    try:
        return LaunchFailureKind(value)
    except ValueError:
        return None
