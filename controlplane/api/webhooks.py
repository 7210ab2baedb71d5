"""Determined's webhook routes: GetWebhooks, PostWebhook, PatchWebhook, DeleteWebhook and
TestWebhook. (PostWebhookEventData, `/api/v1/webhooks/custom`, is a trial's report: api/trials.)"""

from __future__ import annotations

import uuid

from litestar import Request, delete, get, patch, post
from litestar.params import JSONBody

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.reports import Empty
from controlplane.api.schemas.webhooks import (
    GetWebhooksResponse,
    PatchWebhook,
    PostWebhookResponse,
    TestWebhookResponse,
    TriggerOut,
    WebhookIn,
    WebhookOut,
)
from controlplane.domain import webhooks as wh
from controlplane.domain.errors import InvalidArgument, Unavailable
from controlplane.services import webhooks
from controlplane.services.webhook_shipper import WebhookShipper

SHIPPER = "webhook_shipper"  # app.state key


def webhook_out(hook: wh.HookView) -> WebhookOut:
    return WebhookOut(
        id=hook.id,
        name=hook.name,
        url=hook.url,
        webhook_type=hook.webhook_type.wire,
        mode=hook.mode.wire,
        workspace_id=hook.workspace_id,
        triggers=[
            TriggerOut(
                id=t.id,
                trigger_type=t.trigger_type.wire,
                condition=t.condition,
                webhook_id=hook.id,
            )
            for t in hook.triggers
        ],
    )


def _new(data: WebhookIn) -> webhooks.NewWebhook:
    triggers = []
    for t in data.triggers or ():
        kind = wh.enum_from_wire(wh.TriggerType, "TRIGGER_TYPE_", t.trigger_type, "triggerType")
        triggers.append(wh.check_trigger(kind, t.condition))
    # Determined's client always sends a mode; an unspecified one means WORKSPACE.
    mode = data.mode or "WEBHOOK_MODE_WORKSPACE"
    if mode == "WEBHOOK_MODE_UNSPECIFIED":
        mode = "WEBHOOK_MODE_WORKSPACE"
    return webhooks.NewWebhook(
        name=wh.check_name(data.name),
        url=wh.check_url(data.url),
        webhook_type=wh.enum_from_wire(
            wh.WebhookType, "WEBHOOK_TYPE_", data.webhook_type, "webhookType"
        ),
        mode=wh.enum_from_wire(wh.WebhookMode, "WEBHOOK_MODE_", mode, "mode"),
        workspace_id=data.workspace_id,
        triggers=tuple(triggers),
    )


@get("/api/v1/webhooks")
async def get_webhooks(db: Db, principal: Caller) -> GetWebhooksResponse:
    """The global webhooks, and those of the workspaces the caller manages (an admin: all)."""
    return GetWebhooksResponse(
        webhooks=[webhook_out(h) for h in await webhooks.list_webhooks(db, principal)]
    )


@post("/api/v1/webhooks", status_code=200)
async def post_webhook(
    data: JSONBody[WebhookIn], db: Db, principal: Caller, ctx: Ctx
) -> PostWebhookResponse:
    hook = await webhooks.create_webhook(db, principal, _new(data), ctx.clock())
    return PostWebhookResponse(webhook=webhook_out(hook))


@patch("/api/v1/webhooks/{webhook_id:int}")
async def patch_webhook(
    data: JSONBody[PatchWebhook], db: Db, principal: Caller, webhook_id: Id32
) -> Empty:
    """Determined's PatchWebhook changes the URL only."""
    await webhooks.patch_url(db, principal, webhook_id, data.url)
    return Empty()


@delete("/api/v1/webhooks/{webhook_id:int}", status_code=200)
async def delete_webhook(db: Db, principal: Caller, webhook_id: Id32) -> Empty:
    """Deliveries already queued for it still go out."""
    await webhooks.delete_webhook(db, principal, webhook_id)
    return Empty()


@post("/api/v1/webhooks/{webhook_id:int}/test", status_code=200)
async def test_webhook(
    request: Request, db: Db, principal: Caller, ctx: Ctx, webhook_id: Id32
) -> TestWebhookResponse:
    """Send the test body now; `completed`: the receiver answered 2xx."""
    hook = await webhooks.for_test(db, principal, webhook_id)
    await db.commit()  # no transaction stays open while the receiver answers
    shipper: WebhookShipper | None = request.app.state.get(SHIPPER)
    if shipper is None:
        raise Unavailable("the webhook sender is not running")
    if not hook.url:
        raise InvalidArgument(f"webhook {webhook_id} has no url")
    completed = await shipper.probe(hook, ctx.clock(), str(uuid.uuid4()))
    return TestWebhookResponse(completed=completed)


ROUTES = [get_webhooks, post_webhook, patch_webhook, delete_webhook, test_webhook]
