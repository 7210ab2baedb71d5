"""The webhook outbox: events written with the change they report, turned into deliveries later.

`record_state` and `record_alert` only add a row to the caller's session: the event commits or
rolls back with the state change or the alert, and no request or transition waits on a webhook.
`expand_events` (run by the shipper loop) matches each event against the webhooks and queues one
delivery per webhook it fires, deleting the event in the same transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import delete, event, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from controlplane.db.models import (
    Experiment,
    Project,
    WebhookDelivery,
    WebhookEvent,
    Workspace,
)
from controlplane.domain import webhooks as wh
from controlplane.services import webhooks

EXPAND_BATCH = 200

# The shippers of this process (app lifespan): woken when a transaction that recorded an event
# commits, so that an idle master polls nothing (a command's life costs no webhook statement).
_WAKERS: list[Callable[[], None]] = []


def add_waker(wake: Callable[[], None]) -> None:
    _WAKERS.append(wake)


def remove_waker(wake: Callable[[], None]) -> None:
    if wake in _WAKERS:
        _WAKERS.remove(wake)


_PENDING = "webhook_events_recorded"


def _after_commit(session: Session) -> None:
    if session.info.pop(_PENDING, False):
        for wake in list(_WAKERS):
            wake()


def _wake_after_commit(session: AsyncSession) -> None:
    sync = session.sync_session
    sync.info[_PENDING] = True
    if not event.contains(sync, "after_commit", _after_commit):
        event.listen(sync, "after_commit", _after_commit)


def record_state(session: AsyncSession, experiment_id: int, state: str, now: datetime) -> None:
    """The experiment entered `state` (a RunState value): may fire state-change triggers."""
    session.add(
        WebhookEvent(
            kind=wh.TriggerType.EXPERIMENT_STATE_CHANGE.value,
            experiment_id=experiment_id,
            trial_id=None,
            data={"state": state},
            at=now,
        )
    )
    _wake_after_commit(session)


def record_alert(
    session: AsyncSession,
    experiment_id: int,
    trial_id: int | None,
    alert: dict[str, Any],
    now: datetime,
) -> None:
    """`core_context.alert(...)`: may fire CUSTOM triggers."""
    session.add(
        WebhookEvent(
            kind=wh.TriggerType.CUSTOM.value,
            experiment_id=experiment_id,
            trial_id=trial_id,
            data=alert,
            at=now,
        )
    )
    _wake_after_commit(session)


def _facts(exp: Experiment, project: Project, ws: Workspace, state: str) -> wh.ExperimentFacts:
    resources = (exp.config or {}).get("resources") or {}
    slots = resources.get("slots_per_trial", 1)
    return wh.ExperimentFacts(
        id=exp.id,
        state=state,
        name=exp.name,
        workspace=ws.name,
        project=project.name,
        resource_pool=exp.resource_pool or resources.get("resource_pool") or "",
        slots_per_trial=slots if isinstance(slots, int) else 1,
        start_time=exp.start_time,
        end_time=exp.end_time,
        workspace_id=ws.id,
        project_id=project.id,
    )


def _event(row: WebhookEvent, facts: wh.ExperimentFacts) -> wh.Event:
    kind = wh.TriggerType(row.kind)
    alert = None
    if kind is wh.TriggerType.CUSTOM:
        data = row.data or {}
        alert = wh.Alert(
            title=str(data.get("title", "")),
            description=str(data.get("description", "")),
            level=str(data.get("level", "LOG_LEVEL_INFO")),
            trial_id=row.trial_id,
        )
    return wh.Event(
        kind=kind,
        experiment=facts,
        event_id=str(uuid.uuid4()),
        at=row.at,
        state=facts.state if kind is wh.TriggerType.EXPERIMENT_STATE_CHANGE else None,
        alert=alert,
    )


async def expand_events(
    session: AsyncSession,
    now: datetime,
    *,
    base_url: str = "",
    limit: int = EXPAND_BATCH,
    locking: Callable[[Any], Any] = lambda query: query,
) -> int:
    """Queue the deliveries of up to `limit` events and delete them; the number handled.
    `locking` adds the dialect's row lock (PostgreSQL: FOR UPDATE SKIP LOCKED)."""
    rows = list(
        await session.scalars(locking(select(WebhookEvent).order_by(WebhookEvent.id).limit(limit)))
    )
    if not rows:
        return 0
    hooks = await webhooks.all_views(session)
    places: dict[int, tuple[Experiment, Project, Workspace]] = {}
    if hooks:
        ids = sorted({r.experiment_id for r in rows})
        found = await session.execute(
            select(Experiment, Project, Workspace)
            .join(Project, Project.id == Experiment.project_id)
            .join(Workspace, Workspace.id == Project.workspace_id)
            .where(Experiment.id.in_(ids))
        )
        places = {exp.id: (exp, project, ws) for exp, project, ws in found.all()}
    for row in rows:
        place = places.get(row.experiment_id)
        if place is None:  # no webhooks, or the experiment was deleted since
            continue
        exp, project, ws = place
        state = str((row.data or {}).get("state", exp.state))
        event = _event(row, _facts(exp, project, ws, state))
        config = wh.HookConfig.of((exp.config or {}).get("integrations"))
        for hook, _trigger in wh.firing(
            hooks, event.kind, state=event.state, config=config, workspace_id=ws.id
        ):
            session.add(
                WebhookDelivery(
                    webhook_id=hook.id,
                    url=hook.url,
                    body=wh.body_for(hook.webhook_type, event, base_url),
                    attempts=0,
                    next_attempt_at=now,
                    failed=False,
                    last_error="",
                    created_at=now,
                )
            )
    await session.execute(delete(WebhookEvent).where(WebhookEvent.id.in_([r.id for r in rows])))
    return len(rows)
