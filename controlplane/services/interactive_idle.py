"""Kills notebooks and TensorBoards that sit idle, writing the reason into their logs.

Every `interval_s` the master takes the live, ready notebooks and TensorBoards, their stored
idle clock (commands.last_activity_at), their last proxied request (the proxy's activity board,
in memory), and for notebooks what their Jupyter server says of its kernels and terminals;
`domain.interactive.decide_idle` says who is idle and whose clock to store (throttled: the
proxy itself never writes). A verdict ends the task as a kill does, after a log line with the
reason. The stored clock is what a restarted master counts from.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.models import Allocation, Command, Task, User
from controlplane.db.session import transaction
from controlplane.domain.interactive import (
    IdleFacts,
    IdleSnapshot,
    JupyterState,
    Kind,
    decide_idle,
    parse_idle_type,
)
from controlplane.services import commands, logs
from controlplane.services.db_outage import outage_watch, report_pass_failure
from controlplane.services.interactive import SETTINGS_KEY
from controlplane.services.principals import Principal
from controlplane.services.reschedule import take_reschedule

log = logging.getLogger(__name__)


async def jupyter_state(
    client: httpx.AsyncClient, address: str, base_url: str, secret: str | None = None
) -> JupyterState:
    # The task's gate admits only the proxy's secret: the idle check shows it too.
    headers = {"X-Resolute-Proxy-Secret": secret} if secret else {}
    url = f"http://{address}{base_url}api/"
    kernels = (await client.get(f"{url}kernels", headers=headers, timeout=5)).json()
    terminals_r = await client.get(f"{url}terminals", headers=headers, timeout=5)
    terminals = terminals_r.json() if terminals_r.status_code == 200 else []
    return JupyterState(
        kernels=len(kernels),
        busy_kernels=sum(1 for k in kernels if k.get("execution_state") == "busy"),
        kernel_connections=sum(int(k.get("connections") or 0) for k in kernels),
        terminals=len(terminals),
    )


class IdleWatcher:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        clock: Callable[[], datetime],
        activity: Any,
        client: httpx.AsyncClient,
        poke: Callable[[str], None],
        interval_s: float,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._clock = clock
        self._activity = activity
        self._client = client
        self._poke = poke
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                await self.check()
            except Exception as exc:
                watch = outage_watch(self._sessionmaker)
                report_pass_failure(log, "the idle check of interactive tasks", exc, watch)

    async def check(self) -> None:
        async with self._sessionmaker() as session:
            rows = (
                await session.execute(
                    select(
                        Task.task_id,
                        Task.task_type,
                        Command.config,
                        Command.last_activity_at,
                        Allocation.proxy_address,
                        Allocation.proxy_secret,
                    )
                    .join(Command, Command.task_id == Task.task_id)
                    .join(Allocation, Allocation.task_id == Task.task_id)
                    .where(
                        Task.task_type.in_((Kind.NOTEBOOK.value, Kind.TENSORBOARD.value)),
                        Allocation.end_time.is_(None),
                        Allocation.ready.is_(True),
                        Command.state == "ACTIVE",
                    )
                )
            ).all()
        facts = []
        for task_id, task_type, config, stored, address, secret in rows:
            settings = config.get(SETTINGS_KEY) or {}
            kind = Kind(task_type)
            jupyter = None
            if kind is Kind.NOTEBOOK and settings.get("idle_timeout_s") and address:
                try:
                    jupyter = await jupyter_state(
                        self._client, address, f"/proxy/{task_id}/", secret
                    )
                except (httpx.HTTPError, ValueError):
                    jupyter = None
            facts.append(
                IdleFacts(
                    task_id=task_id,
                    kind=kind,
                    timeout_s=settings.get("idle_timeout_s"),
                    stored=stored,
                    proxied=self._activity.last.get(task_id),
                    idle_type=parse_idle_type(settings.get("idle_type")),
                    jupyter=jupyter,
                )
            )
        now = self._clock()
        plan = decide_idle(IdleSnapshot(now=now, tasks=tuple(facts)))
        if plan.store:
            async with transaction(self._sessionmaker) as session:
                for task_id, at in plan.store:
                    # Never backwards: another master's (or an earlier) write may be newer.
                    await session.execute(
                        update(Command)
                        .where(
                            Command.task_id == task_id,
                            or_(Command.last_activity_at.is_(None), Command.last_activity_at < at),
                        )
                        .values(last_activity_at=at)
                    )
        for task_id, reason in plan.kill:
            await self._end(task_id, reason, now)

    async def _end(self, task_id: str, reason: str, now: datetime) -> None:
        async with transaction(self._sessionmaker) as session:
            task = await session.get(Task, task_id)
            owner = await session.get(User, task.owner_id) if task is not None else None
            if owner is None:
                return
            principal = Principal(user=owner, token="")
            line = logs.LogLine(task_id=task_id, log=reason + "\n", source="master")
            await logs.append(session, principal, [line], now)
            await commands.kill(session, owner, task_id, now, task.task_type)
            pools = take_reschedule(session)
        log.info("task %s: %s", task_id, reason)
        for pool in pools:
            self._poke(pool)
