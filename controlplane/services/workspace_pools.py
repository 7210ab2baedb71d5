"""Which pools a workspace may use (Determined's RP-workspace bindings) and its slot quotas.

A pool bound to one or more workspaces is usable only by their work; a pool bound to none is
usable by every workspace. The cluster's default compute and aux pools cannot be bound: work
that names no pool and has no workspace default lands there, so everyone must be able to use
them. Only an admin changes bindings and quotas. Work submitted in a workspace to a pool it may
not use is refused (`check_available`); what was queued or running before a binding changed
stays where it is.

A quota caps the slots a workspace's jobs hold in one pool at once; the schedulers enforce it
(resource_pools/quota.py) from the rows the scheduling pass reads with each job.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import PoolBinding, PoolQuota, User, Workspace
from controlplane.domain.errors import Conflict, InvalidArgument, NotFound, PermissionDenied
from controlplane.services.reschedule import mark_reschedule


@dataclass(frozen=True)
class PoolNames:
    """The master's pools as the config names them, and its default compute and aux pools."""

    all: Collection[str]
    defaults: Collection[str] = ()

    def check_exists(self, pool: str) -> None:
        if pool not in self.all:
            known = ", ".join(sorted(self.all)) or "none"
            raise NotFound(f"resource pool {pool!r} does not exist (pools: {known})")


def only_admin(user: User, what: str) -> None:
    if not user.admin:
        raise PermissionDenied(f"only an admin may {what}")


# --- bindings -----------------------------------------------------------------------------------


async def bound_to_pool(session: AsyncSession, pool: str) -> list[int]:
    """The ids of the workspaces bound to ``pool``, ascending (none: everyone may use it)."""
    rows = await session.scalars(
        select(PoolBinding.workspace_id)
        .where(PoolBinding.resource_pool == pool)
        .order_by(PoolBinding.workspace_id)
    )
    return list(rows)


async def pools_with_bindings(session: AsyncSession) -> set[str]:
    return set(await session.scalars(select(PoolBinding.resource_pool).distinct()))


async def available_pools(
    session: AsyncSession, workspace_id: int, pools: Iterable[str]
) -> list[str]:
    """The pools (of ``pools``) the workspace may use: unbound ones and those bound to it."""
    bound: dict[str, set[int]] = {}
    for pool, ws in (
        await session.execute(select(PoolBinding.resource_pool, PoolBinding.workspace_id))
    ).all():
        bound.setdefault(pool, set()).add(ws)
    return [p for p in sorted(pools) if p not in bound or workspace_id in bound[p]]


async def check_available(session: AsyncSession, pool: str, ws: Workspace) -> None:
    """Refuses work of workspace ``ws`` in a pool bound only to other workspaces."""
    bound = await bound_to_pool(session, pool)
    if bound and ws.id not in bound:
        raise InvalidArgument(
            f"resource pool {pool!r} is not bound to workspace {ws.name!r}: it is reserved for "
            f"the workspaces bound to it (`det workspace list-pools {ws.name}` shows the pools "
            "this workspace may use)"
        )


async def check_defaults(session: AsyncSession, ws: Workspace, pools: PoolNames) -> None:
    """The workspace's default compute and aux pools exist and are available to it."""
    for pool in (ws.default_compute_pool, ws.default_aux_pool):
        if pool:
            try:
                pools.check_exists(pool)
            except NotFound as exc:
                raise InvalidArgument(str(exc)) from None
            await check_available(session, pool, ws)


async def workspaces_named(
    session: AsyncSession, ids: Sequence[int], names: Sequence[str]
) -> list[Workspace]:
    """The workspaces a binding request names, by id and by name; NotFound names the missing."""
    found: dict[int, Workspace] = {}
    if ids:
        rows = await session.scalars(select(Workspace).where(Workspace.id.in_(set(ids))))
        found.update({w.id: w for w in rows})
        missing = sorted(set(ids) - set(found))
        if missing:
            raise NotFound(f"workspaces not found: {', '.join(map(str, missing))}")
    if names:
        rows = await session.scalars(select(Workspace).where(Workspace.name.in_(set(names))))
        by_name = {w.name: w for w in rows}
        missing_names = sorted(set(names) - set(by_name))
        if missing_names:
            raise NotFound(f"workspaces not found: {', '.join(map(repr, missing_names))}")
        found.update({w.id: w for w in by_name.values()})
    return [found[k] for k in sorted(found)]


def _bindable(pool: str, pools: PoolNames) -> None:
    pools.check_exists(pool)
    if pool in pools.defaults:
        raise InvalidArgument(
            f"resource pool {pool!r} is a default pool of the cluster and cannot be bound: work "
            "that names no pool runs there, so every workspace must be able to use it"
        )


async def bind(
    session: AsyncSession, user: User, pool: str, targets: Sequence[Workspace], pools: PoolNames
) -> None:
    only_admin(user, "bind resource pools to workspaces")
    _bindable(pool, pools)
    if not targets:
        raise InvalidArgument("name at least one workspace (workspaceIds or workspaceNames)")
    already = set(await bound_to_pool(session, pool))
    twice = [w.name for w in targets if w.id in already]
    if twice:
        raise Conflict(
            f"resource pool {pool!r} is already bound to workspace(s) {', '.join(map(repr, twice))}"
        )
    session.add_all(PoolBinding(resource_pool=pool, workspace_id=w.id) for w in targets)
    await session.flush()


async def unbind(
    session: AsyncSession, user: User, pool: str, targets: Sequence[Workspace], pools: PoolNames
) -> None:
    only_admin(user, "unbind resource pools from workspaces")
    pools.check_exists(pool)
    if not targets:
        raise InvalidArgument("name at least one workspace (workspaceIds or workspaceNames)")
    bound = set(await bound_to_pool(session, pool))
    loose = [w.name for w in targets if w.id not in bound]
    if loose:
        raise NotFound(
            f"resource pool {pool!r} is not bound to workspace(s) {', '.join(map(repr, loose))}"
        )
    await session.execute(
        delete(PoolBinding).where(
            PoolBinding.resource_pool == pool,
            PoolBinding.workspace_id.in_([w.id for w in targets]),
        )
    )


async def overwrite(
    session: AsyncSession, user: User, pool: str, targets: Sequence[Workspace], pools: PoolNames
) -> None:
    """The pool's bindings become exactly ``targets`` (none: the pool is open to everyone)."""
    only_admin(user, "bind resource pools to workspaces")
    if targets:
        _bindable(pool, pools)
    else:
        pools.check_exists(pool)
    await session.execute(delete(PoolBinding).where(PoolBinding.resource_pool == pool))
    session.add_all(PoolBinding(resource_pool=pool, workspace_id=w.id) for w in targets)
    await session.flush()


# --- quotas -------------------------------------------------------------------------------------


async def quotas_of(session: AsyncSession, workspace_id: int) -> dict[str, int]:
    rows = await session.execute(
        select(PoolQuota.resource_pool, PoolQuota.max_slots)
        .where(PoolQuota.workspace_id == workspace_id)
        .order_by(PoolQuota.resource_pool)
    )
    return {pool: slots for pool, slots in rows.all()}


async def set_quotas(
    session: AsyncSession,
    user: User,
    ws: Workspace,
    changes: Mapping[str, int | None],
    pools: PoolNames,
) -> None:
    """Per pool: a number sets the workspace's quota there, None removes it."""
    if not changes:
        return
    only_admin(user, "set a workspace's slot quotas")
    for pool, slots in changes.items():
        try:
            pools.check_exists(pool)
        except NotFound as exc:
            raise InvalidArgument(str(exc)) from None
        if slots is not None and slots < 0:
            raise InvalidArgument(f"the slot quota for pool {pool!r} must be >= 0, got {slots}")
    current = await quotas_of(session, ws.id)
    for pool, slots in changes.items():
        if slots is None:
            if pool in current:
                await session.execute(
                    delete(PoolQuota).where(
                        PoolQuota.workspace_id == ws.id, PoolQuota.resource_pool == pool
                    )
                )
        elif pool in current:
            row = await session.get(PoolQuota, (ws.id, pool))
            assert row is not None
            row.max_slots = slots
        else:
            session.add(PoolQuota(workspace_id=ws.id, resource_pool=pool, max_slots=slots))
        # The pool's next pass reads the queue again, with the new quota.
        mark_reschedule(session, pool)
    await session.flush()
