"""Notebooks, TensorBoards and shells: their kinds, idle settings, and the idle decision.

Pure: values in, values out. The master reads a notebook's or TensorBoard's activity (the last
proxied request, and for notebooks what its Jupyter server says of its kernels and terminals)
and `idle_verdict` says whether to kill it, and why, for the task's log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from controlplane.domain.errors import InvalidArgument


class Kind(StrEnum):
    """The task type of each interactive kind, as Task.task_type stores it."""

    NOTEBOOK = "NOTEBOOK"
    TENSORBOARD = "TENSORBOARD"
    SHELL = "SHELL"


class IdleType(StrEnum):
    """Determined's `notebook_idle_type`: what counts as the notebook being in use."""

    KERNELS_OR_TERMINALS = "kernels_or_terminals"
    KERNEL_CONNECTIONS = "kernel_connections"
    ACTIVITY = "activity"


DEFAULT_IDLE_TYPE = IdleType.KERNELS_OR_TERMINALS
DEFAULT_TENSORBOARD_TIMEOUT_S = 300
MAX_TIMEOUT_S = 366 * 24 * 3600
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def parse_timeout(value: object, key: str) -> float | None:
    """`idle_timeout` as Determined takes it: a duration ("30m", "1h", "90s") or seconds; None
    (or absent) means never."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidArgument(f"{key} must be a duration such as 30m or a number of seconds")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        match = _DURATION.match(value)
        if match is None:
            raise InvalidArgument(
                f"{key} {value!r} is not a duration: use a number with s, m, h or d (e.g. 30m)"
            )
        seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    else:
        raise InvalidArgument(f"{key} must be a duration such as 30m or a number of seconds")
    if not 0 < seconds <= MAX_TIMEOUT_S:
        raise InvalidArgument(f"{key} must be more than 0 and at most a year, got {value!r}")
    return seconds


def parse_idle_type(value: object) -> IdleType:
    if value is None:
        return DEFAULT_IDLE_TYPE
    try:
        return IdleType(str(value))
    except ValueError:
        names = ", ".join(t.value for t in IdleType)
        raise InvalidArgument(f"notebook_idle_type {value!r} is not one of: {names}") from None


@dataclass(frozen=True)
class JupyterState:
    """What a Jupyter server reports of itself (GET /api/kernels and /api/terminals)."""

    kernels: int = 0
    busy_kernels: int = 0
    kernel_connections: int = 0
    terminals: int = 0


@dataclass(frozen=True)
class Activity:
    kind: Kind
    timeout_s: float | None
    # The later of the task becoming ready and its last proxied request.
    last_activity: datetime
    idle_type: IdleType = DEFAULT_IDLE_TYPE
    jupyter: JupyterState | None = None  # notebooks only; None: not known (not asked yet)


def _in_use(a: Activity) -> str | None:
    """Why a notebook counts as in use regardless of traffic, or None."""
    j = a.jupyter
    if j is None:
        return None
    if j.busy_kernels:
        return "a kernel is busy"
    if a.idle_type is IdleType.KERNELS_OR_TERMINALS and (j.kernels or j.terminals):
        return "kernels or terminals are open"
    if a.idle_type is IdleType.KERNEL_CONNECTIONS and j.kernel_connections:
        return "kernels have connections"
    return None


def idle_verdict(a: Activity, now: datetime) -> str | None:
    """The reason to kill the task for idleness, or None to keep it."""
    if a.timeout_s is None or a.kind is Kind.SHELL:
        return None
    idle_s = (now - a.last_activity).total_seconds()
    if idle_s < a.timeout_s:
        return None
    if a.kind is Kind.NOTEBOOK:
        # Unknown (its Jupyter server did not answer): a running kernel may be at work; keep it.
        if a.jupyter is None or _in_use(a) is not None:
            return None
        return (
            f"notebook idle for {idle_s:.0f}s (idle_timeout {a.timeout_s:g}s, "
            f"notebook_idle_type {a.idle_type.value}): killed"
        )
    return f"TensorBoard received no requests for {idle_s:.0f}s (timeout {a.timeout_s:g}s): killed"


# The idle clock is stored (commands.last_activity_at) when it has moved on by this much: often
# enough that a restarted master resumes it within seconds, rarely enough that traffic through
# the proxy never turns into a write per request.
PERSIST_EVERY_S = 5.0


@dataclass(frozen=True)
class IdleFacts:
    """One live, ready notebook or TensorBoard as the idle check sees it."""

    task_id: str
    kind: Kind
    timeout_s: float | None
    stored: datetime | None  # the idle clock as stored (survives a master restart)
    proxied: datetime | None  # the last proxied request this master saw (memory only)
    idle_type: IdleType = DEFAULT_IDLE_TYPE
    jupyter: JupyterState | None = None


@dataclass(frozen=True)
class IdleSnapshot:
    now: datetime
    tasks: tuple[IdleFacts, ...]
    persist_every_s: float = PERSIST_EVERY_S


@dataclass(frozen=True)
class IdlePlan:
    kill: tuple[tuple[str, str], ...] = ()  # (task id, the reason for its log)
    store: tuple[tuple[str, datetime], ...] = ()  # (task id, its idle clock to store)


def decide_idle(snapshot: IdleSnapshot) -> IdlePlan:
    """Who is idle past their timeout, and whose idle clock to store.

    A task's last activity is the latest of its stored clock, its last proxied request, and now
    when its Jupyter server says it is in use (Determined's idle reports count a busy kernel, or
    open kernels and terminals, as activity); a task seen for the first time starts its clock
    now. The clock is stored only when it moved on by `persist_every_s` (or was never stored).
    """
    now = snapshot.now
    kill: list[tuple[str, str]] = []
    store: list[tuple[str, datetime]] = []
    for t in snapshot.tasks:
        seen = [at for at in (t.stored, t.proxied) if at is not None]
        last = max(seen) if seen else now
        activity = Activity(t.kind, t.timeout_s, last, t.idle_type, t.jupyter)
        if t.kind is Kind.NOTEBOOK and _in_use(activity) is not None:
            last = now
        if t.stored is None or (last - t.stored).total_seconds() >= snapshot.persist_every_s:
            store.append((t.task_id, last))
        reason = idle_verdict(Activity(t.kind, t.timeout_s, last, t.idle_type, t.jupyter), now)
        if reason is not None:
            kill.append((t.task_id, reason))
    return IdlePlan(kill=tuple(kill), store=tuple(store))
