"""The loop that sends webhooks: events become deliveries, deliveries are POSTed with retries.

Each pass: (1) one transaction turns queued events into deliveries (webhook_outbox); (2) one
short transaction claims the deliveries that are due by pushing their next attempt a lease
ahead (on PostgreSQL with FOR UPDATE SKIP LOCKED, so two masters never claim the same row);
(3) the POSTs go out with no transaction open; (4) one transaction settles them: a 2xx answer
deletes the delivery, anything else schedules the next attempt (domain.webhooks.next_attempt)
or, after the last, marks it failed. A master that dies between (2) and (4) leaves the claim to
expire after the lease, and the delivery is sent again: at least once, as in Determined.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.models import WebhookDelivery
from controlplane.db.session import transaction
from controlplane.domain import webhooks as wh
from controlplane.services import dialect, webhook_outbox
from controlplane.services.db_outage import outage_watch, report_pass_failure

log = logging.getLogger("controlplane.webhooks")

SEND_BATCH = 50
LEASE = timedelta(seconds=60)
SEND_TIMEOUT_S = 10.0
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class Claimed:
    id: int
    url: str
    body: str
    attempts: int


def _locking(session: AsyncSession) -> Callable[[Any], Any]:
    if dialect.name_of(session) == "postgresql":
        return lambda query: query.with_for_update(skip_locked=True)
    return lambda query: query  # SQLite: one writer at a time


async def claim_due(session: AsyncSession, now: datetime, limit: int = SEND_BATCH) -> list[Claimed]:
    query = (
        select(WebhookDelivery)
        .where(WebhookDelivery.failed.is_(False), WebhookDelivery.next_attempt_at <= now)
        .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.id)
        .limit(limit)
    )
    rows = list(await session.scalars(_locking(session)(query)))
    for row in rows:
        row.next_attempt_at = now + LEASE
    return [Claimed(r.id, r.url, r.body, r.attempts) for r in rows]


async def settle(
    session: AsyncSession, results: list[tuple[Claimed, str | None]], now: datetime
) -> None:
    """Record what each send got: None (a 2xx answer) or why it failed."""
    done = [c.id for c, error in results if error is None]
    if done:
        await session.execute(delete(WebhookDelivery).where(WebhookDelivery.id.in_(done)))
    for claimed, error in results:
        if error is None:
            continue
        attempts = claimed.attempts + 1
        retry_at = wh.next_attempt(attempts, now)
        await session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id == claimed.id)
            .values(
                attempts=attempts,
                last_error=error[:MAX_ERROR_CHARS],
                failed=retry_at is None,
                next_attempt_at=retry_at or now,
            )
        )
        if retry_at is None:
            log.warning(
                "webhook delivery %d to %s failed %d times, giving up: %s",
                claimed.id,
                claimed.url,
                attempts,
                error,
            )


async def post(
    client: httpx.AsyncClient, url: str, body: str, key: bytes, now: datetime
) -> str | None:
    """POST one body, signed as Determined signs it; None when answered with 2xx."""
    stamp = int(now.timestamp())
    headers = {
        "Content-Type": "application/json; charset=UTF-8",
        wh.TIMESTAMP_HEADER: str(stamp),
        wh.SIGNATURE_HEADER: wh.signature(key, stamp, body),
    }
    try:
        response = await client.post(url, content=body.encode(), headers=headers)
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
    if 200 <= response.status_code < 300:
        return None
    return f"answered {response.status_code}"


class WebhookShipper:
    """Runs a pass when woken (a transaction that recorded an event committed in this process),
    when a retry falls due, and every `sweep_s` as a safety net (events another process wrote,
    a lease that expired); from start() to stop(). An idle master runs no pass at all."""

    def __init__(
        self,
        factory: async_sessionmaker[AsyncSession],
        clock: Callable[[], datetime],
        *,
        base_url: str = "",
        signing_key: bytes | None = None,
        sweep_s: float = 300.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._factory = factory
        self._clock = clock
        self._base_url = base_url.rstrip("/")
        self._key = signing_key or secrets.token_bytes(32)
        self._sweep_s = sweep_s
        self._client = client
        self._own_client = client is None
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None

    def wake(self) -> None:
        """Run a pass soon; callable from any thread (no-op before start)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake.set)

    async def start(self) -> None:
        self._http()  # receivers are outside the cluster: the environment's HTTP proxy applies
        self._loop = asyncio.get_running_loop()
        webhook_outbox.add_waker(self.wake)
        self._task = asyncio.create_task(self._run(), name="webhook-shipper")

    async def stop(self) -> None:
        webhook_outbox.remove_waker(self.wake)
        self._loop = None
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _run(self) -> None:
        wait_s = 0.0  # a first pass at start: what a restart left queued
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=wait_s)
            self._wake.clear()
            wait_s = self._sweep_s
            try:
                due = await self.tick()
            except Exception as exc:
                report_pass_failure(log, "webhook pass", exc, outage_watch(self._factory))
                continue
            if due is not None:
                until = (due - self._clock()).total_seconds()
                wait_s = min(self._sweep_s, max(until, 0.0))

    async def probe(self, hook: wh.HookView, now: datetime, event_id: str) -> bool:
        """TestWebhook: POST the test body now; whether the receiver answered 2xx."""
        body = wh.probe_body(hook.webhook_type, event_id, now)
        return await post(self._http(), hook.url, body, self._key, now) is None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=SEND_TIMEOUT_S, follow_redirects=False)
        return self._client

    async def tick(self) -> datetime | None:
        """One pass; when the next queued delivery falls due (None: nothing is queued)."""
        async with transaction(self._factory) as session:
            await webhook_outbox.expand_events(
                session, self._clock(), base_url=self._base_url, locking=_locking(session)
            )
            claimed = await claim_due(session, self._clock())
        if claimed:
            now = self._clock()
            client = self._http()
            errors = await asyncio.gather(
                *(post(client, c.url, c.body, self._key, now) for c in claimed)
            )
            async with transaction(self._factory) as session:
                await settle(session, list(zip(claimed, errors, strict=True)), self._clock())
        async with self._factory() as session:
            return await next_due(session)


async def next_due(session: AsyncSession) -> datetime | None:
    query = select(func.min(WebhookDelivery.next_attempt_at)).where(
        WebhookDelivery.failed.is_(False)
    )
    return await session.scalar(query)
