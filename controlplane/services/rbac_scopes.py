"""Where the objects a request names live, who owns them, where a new one may land, and
which workspaces a list shows: the scopes RBAC judges (api/access.py, the list services).

The rules themselves are the pure table in `controlplane.domain.rbac`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import (
    Checkpoint,
    Command,
    Experiment,
    Project,
    RegisteredModel,
    Task,
    Template,
    Trial,
    Workspace,
)
from controlplane.domain import rbac
from controlplane.domain.errors import PermissionDenied

# --- where an object lives ----------------------------------------------------------------------


async def workspace_of(session: AsyncSession, kind: str, value: object) -> int | None:
    """The workspace of the object a path names (None: no such object)."""
    if kind == "workspace":
        ws = await session.get(Workspace, _int(value))
        return ws.id if ws is not None else None
    if kind == "project":
        return await session.scalar(select(Project.workspace_id).where(Project.id == _int(value)))
    if kind == "experiment":
        return await session.scalar(_exp_ws().where(Experiment.id == _int(value)))
    if kind == "trial":
        return await session.scalar(
            _exp_ws()
            .join(Trial, Trial.experiment_id == Experiment.id)
            .where(Trial.id == _int(value))
        )
    if kind == "task":
        return await _task_ws(session, str(value))
    if kind == "checkpoint":
        ck = await session.get(Checkpoint, str(value))
        if ck is None:
            return None
        if ck.trial_id is not None:
            return await workspace_of(session, "trial", ck.trial_id)
        return await _task_ws(session, ck.task_id or "")
    if kind == "model":
        return await session.scalar(
            select(RegisteredModel.workspace_id).where(RegisteredModel.name == str(value))
        )
    if kind == "template":
        return await session.scalar(
            select(Template.workspace_id).where(Template.name == str(value))
        )
    raise ValueError(f"unknown scope kind {kind!r}")


def _int(value: object) -> int:
    """A path's id as the database can take it; -1 (no such object) for anything else: ids are
    int32, and a hostile path's 400-digit number must reach the route's own 400, not the
    database driver (an OverflowError there is a 500)."""
    try:
        n = int(str(value))
    except ValueError:
        return -1
    return n if -(2**31) <= n < 2**31 else -1


def _exp_ws():  # type: ignore[no-untyped-def]
    return select(Project.workspace_id).join(Experiment, Experiment.project_id == Project.id)


async def _task_ws(session: AsyncSession, task_id: str) -> int | None:
    ws = await session.scalar(select(Command.workspace_id).where(Command.task_id == task_id))
    if ws is not None:
        return ws
    return await session.scalar(
        _exp_ws()
        .join(Trial, Trial.experiment_id == Experiment.id)
        .join(Task, Task.task_id == Trial.task_id)
        .where(Task.task_id == task_id)
    )


async def owner_of(session: AsyncSession, kind: str, value: object) -> int | None:
    """The user who owns the object a path names (None: unknown or no owner)."""
    if kind == "workspace":
        return await session.scalar(select(Workspace.user_id).where(Workspace.id == _int(value)))
    if kind == "project":
        return await session.scalar(select(Project.user_id).where(Project.id == _int(value)))
    if kind == "experiment":
        return await session.scalar(select(Experiment.owner_id).where(Experiment.id == _int(value)))
    if kind == "trial":
        return await session.scalar(
            select(Experiment.owner_id)
            .join(Trial, Trial.experiment_id == Experiment.id)
            .where(Trial.id == _int(value))
        )
    if kind == "task":
        return await session.scalar(select(Task.owner_id).where(Task.task_id == str(value)))
    if kind == "model":
        return await session.scalar(
            select(RegisteredModel.user_id).where(RegisteredModel.name == str(value))
        )
    if kind == "template":
        return await session.scalar(select(Template.owner_id).where(Template.name == str(value)))
    if kind == "checkpoint":
        ck = await session.get(Checkpoint, str(value))
        if ck is None:
            return None
        if ck.trial_id is not None:
            return await owner_of(session, "trial", ck.trial_id)
        return await owner_of(session, "task", ck.task_id) if ck.task_id else None
    if kind == "user":
        return _int(value)
    return None


# --- where a new object lands -------------------------------------------------------------------

PLACEMENT = "rbac_placement"  # session.info key: the check where this request places objects


@dataclass(frozen=True)
class Placement:
    holdings: rbac.Holdings
    permission: rbac.Permission


def expect_placement(session: AsyncSession, placement: Placement) -> None:
    """Under RBAC, the request may place an object only where `placement` grants it
    (api/access.py sets it for the routes whose `Need.lands` says so)."""
    session.info[PLACEMENT] = placement


def check_placement(session: AsyncSession, workspace_id: int) -> None:
    """Called by the services once they know the workspace a new or moved object lands in
    (named by id, by its config's names, or the default): refuses what the caller may not
    create there. Without RBAC (or for an admin) it does nothing."""
    placement = session.info.get(PLACEMENT)
    if not isinstance(placement, Placement):
        return
    decision = placement.holdings.decide(placement.permission, workspace_id)
    if not decision.allowed:
        raise PermissionDenied(decision.reason)


# --- what a list shows --------------------------------------------------------------------------


def in_workspaces(column: Any, workspaces: frozenset[int] | None) -> ColumnElement[bool]:
    """`column` (a workspace id) is one of `workspaces`; None: any (the list is not filtered)."""
    if workspaces is None:
        return true()
    return column.in_(sorted(workspaces))


def experiments_in(workspaces: frozenset[int] | None) -> ColumnElement[bool]:
    """The experiments of projects in `workspaces` (None: every experiment)."""
    if workspaces is None:
        return true()
    return Experiment.project_id.in_(
        select(Project.id).where(Project.workspace_id.in_(sorted(workspaces)))
    )


async def trials_outside(
    session: AsyncSession, trial_ids: list[int], workspaces: frozenset[int] | None
) -> list[int]:
    """Those of `trial_ids` whose experiment is in none of `workspaces` (None: no trial)."""
    if workspaces is None or not trial_ids:
        return []
    inside = await session.scalars(
        select(Trial.id)
        .join(Experiment, Experiment.id == Trial.experiment_id)
        .where(Trial.id.in_(trial_ids), experiments_in(workspaces))
    )
    found = set(inside)
    return [t for t in trial_ids if t not in found]


async def require_trials_in(
    session: AsyncSession, trial_ids: list[int], workspaces: frozenset[int] | None
) -> None:
    """Refuses a read of trials the caller may not view (a list of trials it names)."""
    outside = await trials_outside(session, trial_ids, workspaces)
    if outside:
        named = ", ".join(map(str, outside[:10])) + (" …" if len(outside) > 10 else "")
        raise PermissionDenied(f"not permitted to view trials {named}: no role grants it there")


async def require_experiments_in(
    session: AsyncSession, experiment_ids: list[int], workspaces: frozenset[int] | None
) -> None:
    """Refuses a read of experiments the caller may not view (a TensorBoard's sources)."""
    if workspaces is None or not experiment_ids:
        return
    inside = set(
        await session.scalars(
            select(Experiment.id).where(
                Experiment.id.in_(experiment_ids), experiments_in(workspaces)
            )
        )
    )
    outside = [e for e in experiment_ids if e not in inside]
    if outside:
        named = ", ".join(map(str, outside[:10])) + (" …" if len(outside) > 10 else "")
        raise PermissionDenied(
            f"not permitted to view experiments {named}: no role grants it there"
        )
