"""Who may call which kind of route: the caller's kind x the route's class x its target.

Pure. The API layer classifies every route (``controlplane.api.access``), says what kind of
caller holds the token and whether the object a route names in its path is the task's own, and
asks `decide`. The route's own checks (ownership, admin) still run after an allow.

A task's token is least privilege:

- a trial's token reads what its owner may read, and acts only on its own trial, allocation
  and experiment (reports, checkpoints, logs, signals, run metadata);
- a command's or interactive task's token acts as its owner (it is the owner's shell), except on
  admin-only routes and on user accounts; it never carries its owner's admin rights;
- no task token passes an admin-only route, or one that is not classified.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class CallerKind(StrEnum):
    USER = "user"  # a login token of a user who is not an admin
    ADMIN = "admin"  # a login token of an admin
    TRIAL = "trial"  # the allocation token of a trial
    TASK = "task"  # the allocation token of any other task (command, notebook, shell, ...)


class RouteClass(StrEnum):
    PUBLIC = "public"  # no token needed (handshake, login)
    AGENT = "agent"  # the agents' socket: the agent protocol's handshake, never a caller's token
    ADMIN = "admin"  # admin-only: users, master config, agents, pools
    ACCOUNT = "account"  # a user's own account: password, display name, logout
    READ = "read"  # reads anyone logged in may make
    OWNER_WRITE = "owner_write"  # changes to objects their owner (or an admin) may change
    TASK_REPORT = "task_report"  # what a running task reports or asks about itself


class Target(StrEnum):
    NONE = "none"  # the path names no object (the route's own checks read its body)
    OWN = "own"  # the path names the calling task's own trial, experiment, allocation or task
    OTHER = "other"  # the path names some other object


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


ALLOW = Decision(True)


def _deny(reason: str) -> Decision:
    return Decision(False, reason)


def decide(caller: CallerKind, route: RouteClass | None, target: Target) -> Decision:
    """May `caller` call a route of class `route` (None: not classified) naming `target`?"""
    if route is RouteClass.PUBLIC:
        return ALLOW
    if route is RouteClass.AGENT:
        return _deny("only agents use this route, through the agent protocol")
    if caller in (CallerKind.USER, CallerKind.ADMIN):
        if route is RouteClass.ADMIN and caller is CallerKind.USER:
            return _deny("only an admin may do this")
        return ALLOW
    task = "a trial's token" if caller is CallerKind.TRIAL else "a task's token"
    if route is None:
        return _deny(f"{task} may not call a route that is not classified for tasks")
    if route is RouteClass.ADMIN:
        return _deny(f"{task} may not do what only an admin may do, even an admin's task")
    if route is RouteClass.ACCOUNT:
        return _deny(f"{task} may not change a user account or its login sessions")
    if route is RouteClass.READ:
        return ALLOW
    if route is RouteClass.TASK_REPORT:
        if target is Target.OTHER:
            return _deny(f"{task} is valid only for its own trial, allocation and task")
        return ALLOW
    # OWNER_WRITE
    if caller is CallerKind.TASK or target is Target.OWN:
        return ALLOW
    return _deny(f"{task} may change only its own trial and experiment")
