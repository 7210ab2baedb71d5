"""NDJSON log streams (`{"result": …}` per line), with follow until the task ends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from controlplane.db.models import TaskLog
from controlplane.services import logs

FOLLOW_POLL_S = 0.25


def _line(result: dict[str, Any]) -> bytes:
    return (json.dumps({"result": result}, separators=(",", ":")) + "\n").encode()


def _message(row: TaskLog) -> str:
    return row.log if row.log.endswith("\n") else row.log + "\n"


def task_log_entry(row: TaskLog) -> dict[str, Any]:
    return {
        "id": str(row.id),
        "taskId": row.task_id,
        "allocationId": row.allocation_id,
        "timestamp": row.timestamp.isoformat().replace("+00:00", "Z"),
        "level": row.level,
        "message": _message(row),
        "log": row.log,
        "agentId": row.agent_id,
        "containerId": row.container_id,
        "rankId": row.rank_id,
        "stdtype": row.stdtype,
        "source": row.source,
    }


def trial_log_entry(row: TaskLog, trial_id: int) -> dict[str, Any]:
    # TrialLogs types the id as int32 where TaskLogs has a string.
    return {**task_log_entry(row), "id": row.id, "trialId": trial_id}


async def stream_logs(
    sessionmaker: async_sessionmaker[AsyncSession],
    query: logs.LogQuery,
    render: Callable[[TaskLog], dict[str, Any]],
    *,
    follow: bool,
    is_done: Callable[[AsyncSession], Awaitable[bool]],
) -> AsyncIterator[bytes]:
    """Pages through logs in id order; with follow, keeps polling until `is_done` and drained."""
    sent = 0
    q = query
    if q.descending:
        # --tail: the newest N, newest first (the Determined client reverses them), then with
        # follow everything after the newest, oldest first.
        async with sessionmaker() as session:
            rows = await logs.fetch(session, q, batch=q.limit or 1000)
        for row in rows:
            yield _line(render(row))
        if not follow:
            return
        q = replace(q, descending=False, after_id=rows[0].id if rows else 0, limit=0)
    while True:
        async with sessionmaker() as session:
            # Check for the end first: a line written after this check is still fetched below.
            done = not follow or await is_done(session)
            batch = 1000 if not q.limit else min(1000, q.limit - sent)
            rows = await logs.fetch(session, q, batch=batch) if batch > 0 else []
        for row in rows:
            yield _line(render(row))
        sent += len(rows)
        if rows:
            q = replace(q, after_id=rows[-1].id)
        if q.limit and sent >= q.limit:
            return
        if not rows:
            if done:
                return
            await asyncio.sleep(FOLLOW_POLL_S)
