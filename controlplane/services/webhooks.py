"""Webhooks: create, list, change the URL of and delete them, with Determined's rules.

A global webhook (no workspace) is an admin's: only an admin creates, changes or deletes one;
everyone sees it. A workspace's webhook is managed by the workspace's owner or an admin (under
RBAC: whoever holds EDIT_WEBHOOKS there) and seen by them (VIEW_WEBHOOKS under RBAC).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Webhook, WebhookTrigger, Workspace
from controlplane.domain import webhooks as wh
from controlplane.domain.errors import InvalidArgument, NotFound, PermissionDenied
from controlplane.domain.rbac import Permission
from controlplane.services.principals import Principal

MAX_WEBHOOKS = 10_000


@dataclass(frozen=True)
class NewWebhook:
    name: str
    url: str
    webhook_type: wh.WebhookType
    mode: wh.WebhookMode
    workspace_id: int | None
    triggers: tuple[wh.TriggerSpec, ...]


def view_of(hook: Webhook, triggers: Sequence[WebhookTrigger]) -> wh.HookView:
    return wh.HookView(
        id=hook.id,
        name=hook.name,
        url=hook.url,
        webhook_type=wh.WebhookType(hook.webhook_type),
        mode=wh.WebhookMode(hook.mode),
        workspace_id=hook.workspace_id,
        triggers=tuple(
            wh.TriggerSpec(wh.TriggerType(t.trigger_type), dict(t.condition or {}), t.id)
            for t in triggers
        ),
    )


def _may_edit(principal: Principal, workspace: Workspace | None) -> bool:
    user = principal.user
    if user.admin:
        return True
    if workspace is None:
        return False  # global webhooks are the admins'
    held = principal.workspaces(Permission.EDIT_WEBHOOKS)
    if held is not None:  # RBAC: the role decides
        return workspace.id in held
    return workspace.user_id == user.id


async def _workspace(session: AsyncSession, workspace_id: int | None) -> Workspace | None:
    if workspace_id is None:
        return None
    ws = await session.get(Workspace, workspace_id)
    if ws is None:
        raise NotFound(f"workspace {workspace_id} not found")
    return ws


def _refuse(workspace: Workspace | None) -> PermissionDenied:
    if workspace is None:
        return PermissionDenied("only an admin may manage global webhooks (no workspaceId)")
    return PermissionDenied(
        f"only the owner of workspace '{workspace.name}' or an admin may manage its webhooks"
    )


async def create_webhook(
    session: AsyncSession, principal: Principal, new: NewWebhook, now: datetime
) -> wh.HookView:
    workspace = await _workspace(session, new.workspace_id)
    if not _may_edit(principal, workspace):
        raise _refuse(workspace)
    if not new.triggers:
        raise InvalidArgument("a webhook needs at least one trigger")
    if new.mode is wh.WebhookMode.SPECIFIC and not new.name:
        raise InvalidArgument(
            "a WEBHOOK_MODE_SPECIFIC webhook needs a name (experiments name it in "
            "integrations.webhooks.webhook_name)"
        )
    count = len((await session.execute(select(Webhook.id).limit(MAX_WEBHOOKS))).all())
    if count >= MAX_WEBHOOKS:
        raise InvalidArgument(f"this master keeps at most {MAX_WEBHOOKS} webhooks")
    hook = Webhook(
        name=new.name,
        url=new.url,
        webhook_type=new.webhook_type.value,
        mode=new.mode.value,
        workspace_id=new.workspace_id,
        created_at=now,
    )
    session.add(hook)
    await session.flush()
    rows = [
        WebhookTrigger(webhook_id=hook.id, trigger_type=t.trigger_type.value, condition=t.condition)
        for t in new.triggers
    ]
    session.add_all(rows)
    await session.flush()
    return view_of(hook, rows)


async def _triggers(session: AsyncSession, ids: Sequence[int]) -> dict[int, list[WebhookTrigger]]:
    out: dict[int, list[WebhookTrigger]] = {i: [] for i in ids}
    if ids:
        rows = await session.scalars(
            select(WebhookTrigger)
            .where(WebhookTrigger.webhook_id.in_(list(ids)))
            .order_by(WebhookTrigger.id)
        )
        for t in rows:
            out[t.webhook_id].append(t)
    return out


async def all_views(session: AsyncSession) -> list[wh.HookView]:
    """Every webhook with its triggers (the table is small: at most MAX_WEBHOOKS)."""
    hooks = list(await session.scalars(select(Webhook).order_by(Webhook.id)))
    triggers = await _triggers(session, [h.id for h in hooks])
    return [view_of(h, triggers[h.id]) for h in hooks]


async def list_webhooks(session: AsyncSession, principal: Principal) -> list[wh.HookView]:
    query = select(Webhook).order_by(Webhook.id)
    user = principal.user
    if not user.admin:
        visible = principal.workspaces(Permission.VIEW_WEBHOOKS)
        if visible is None:  # basic authz: the workspaces the caller owns
            owned = select(Workspace.id).where(Workspace.user_id == user.id)
            query = query.where(
                or_(Webhook.workspace_id.is_(None), Webhook.workspace_id.in_(owned))
            )
        else:
            query = query.where(
                or_(Webhook.workspace_id.is_(None), Webhook.workspace_id.in_(sorted(visible)))
            )
    hooks = list(await session.scalars(query))
    triggers = await _triggers(session, [h.id for h in hooks])
    return [view_of(h, triggers[h.id]) for h in hooks]


async def _editable(session: AsyncSession, principal: Principal, webhook_id: int) -> Webhook:
    hook = await session.get(Webhook, webhook_id)
    if hook is None:
        raise NotFound(f"webhook {webhook_id} not found")
    workspace = await _workspace(session, hook.workspace_id)
    if not _may_edit(principal, workspace):
        raise _refuse(workspace)
    return hook


async def delete_webhook(session: AsyncSession, principal: Principal, webhook_id: int) -> None:
    hook = await _editable(session, principal, webhook_id)
    await session.execute(delete(WebhookTrigger).where(WebhookTrigger.webhook_id == hook.id))
    await session.delete(hook)


async def patch_url(session: AsyncSession, principal: Principal, webhook_id: int, url: str) -> None:
    hook = await _editable(session, principal, webhook_id)
    hook.url = wh.check_url(url)


async def for_test(session: AsyncSession, principal: Principal, webhook_id: int) -> wh.HookView:
    hook = await _editable(session, principal, webhook_id)
    return view_of(hook, (await _triggers(session, [hook.id]))[hook.id])
