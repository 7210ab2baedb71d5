"""Task logs: batched inserts from task containers, filtered reads, follow."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Task, TaskLog
from controlplane.domain import limits
from controlplane.domain.errors import InvalidArgument, NotFound, PermissionDenied
from controlplane.services.principals import Principal

LEVELS = (
    "LOG_LEVEL_UNSPECIFIED",
    "LOG_LEVEL_TRACE",
    "LOG_LEVEL_DEBUG",
    "LOG_LEVEL_INFO",
    "LOG_LEVEL_WARNING",
    "LOG_LEVEL_ERROR",
    "LOG_LEVEL_CRITICAL",
)
MAX_BATCH = 10_000


@dataclass(frozen=True)
class LogLine:
    task_id: str
    log: str
    timestamp: datetime | None = None
    allocation_id: str | None = None
    agent_id: str | None = None
    container_id: str | None = None
    rank_id: int | None = None
    level: str | None = None
    stdtype: str | None = None
    source: str | None = None


async def append(
    session: AsyncSession, principal: Principal, lines: list[LogLine], now: datetime
) -> int:
    if len(lines) > MAX_BATCH:
        raise InvalidArgument(f"at most {MAX_BATCH} log lines per request")
    task_ids = {line.task_id for line in lines}
    for task_id in task_ids:
        if principal.allocation is not None:
            if principal.allocation.task_id != task_id:
                raise PermissionDenied(f"this task's token may not write logs of task {task_id}")
            continue  # its own task, which exists as long as the allocation does
        task = await session.get(Task, task_id)
        if task is None:
            raise NotFound(f"task {task_id} not found")
        if not (principal.user.admin or principal.user.id == task.owner_id):
            raise PermissionDenied(f"only the owner of task {task_id} may write its logs")
    rows = []
    for line in lines:
        level = line.level or "LOG_LEVEL_INFO"
        if level not in LEVELS:
            raise InvalidArgument(f"unknown log level '{level}'")
        rows.append(
            {
                "task_id": line.task_id,
                "allocation_id": line.allocation_id,
                "agent_id": line.agent_id,
                "container_id": line.container_id,
                "rank_id": line.rank_id,
                "timestamp": line.timestamp or now,
                "level": level,
                "stdtype": line.stdtype,
                "source": line.source,
                # PostgreSQL text cannot hold NUL; a stray one must not lose the whole batch.
                "log": limits.truncate_log_line(line.log).replace("\x00", "\ufffd"),
            }
        )
    if rows:
        await session.execute(insert(TaskLog), rows)
    return len(rows)


@dataclass(frozen=True)
class LogQuery:
    task_id: str
    after_id: int = 0
    limit: int = 0
    descending: bool = False
    levels: tuple[str, ...] = ()
    rank_ids: tuple[int, ...] = ()
    agent_ids: tuple[str, ...] = ()
    container_ids: tuple[str, ...] = ()
    allocation_ids: tuple[str, ...] = ()
    stdtypes: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    search_text: str | None = None
    timestamp_before: datetime | None = None
    timestamp_after: datetime | None = None

    def __post_init__(self) -> None:
        """Checked here, not by the database: a stream has already answered 200 when it reads."""
        texts = (
            *self.levels,
            *self.agent_ids,
            *self.container_ids,
            *self.allocation_ids,
            *self.stdtypes,
            *self.sources,
            self.search_text or "",
        )
        if any("\x00" in text for text in texts):
            raise InvalidArgument("log filters must not contain NUL (\\u0000) characters")
        for name, ts in (("before", self.timestamp_before), ("after", self.timestamp_after)):
            if ts is None:
                continue
            if ts.tzinfo is None:
                raise InvalidArgument(f"timestamp{name.title()} needs a zone offset, e.g. Z")
            try:
                ts.astimezone(UTC)
            except OverflowError as exc:
                raise InvalidArgument(f"timestamp{name.title()} is out of range") from exc


async def fetch(session: AsyncSession, q: LogQuery, *, batch: int = 1000) -> list[TaskLog]:
    query = select(TaskLog).where(TaskLog.task_id == q.task_id, TaskLog.id > q.after_id)
    for column, values in (
        (TaskLog.level, q.levels),
        (TaskLog.rank_id, q.rank_ids),
        (TaskLog.agent_id, q.agent_ids),
        (TaskLog.container_id, q.container_ids),
        (TaskLog.allocation_id, q.allocation_ids),
        (TaskLog.stdtype, q.stdtypes),
        (TaskLog.source, q.sources),
    ):
        if values:
            query = query.where(column.in_(values))
    if q.search_text:
        query = query.where(TaskLog.log.contains(q.search_text, autoescape=True))
    if q.timestamp_before:
        query = query.where(TaskLog.timestamp < q.timestamp_before)
    if q.timestamp_after:
        query = query.where(TaskLog.timestamp > q.timestamp_after)
    query = query.order_by(TaskLog.id.desc() if q.descending else TaskLog.id)
    return list(await session.scalars(query.limit(batch)))


async def task_ended(session: AsyncSession, task_id: str) -> bool:
    end = await session.execute(select(Task.end_time).where(Task.task_id == task_id))
    row = end.first()
    return row is None or row[0] is not None


async def fields(session: AsyncSession, task_id: str) -> dict[str, list[Any]]:
    """The distinct values a task's logs can be filtered by (the web UI's log filters)."""
    columns = {
        "agentIds": TaskLog.agent_id,
        "allocationIds": TaskLog.allocation_id,
        "containerIds": TaskLog.container_id,
        "rankIds": TaskLog.rank_id,
        "stdtypes": TaskLog.stdtype,
        "sources": TaskLog.source,
    }
    out: dict[str, list[Any]] = {}
    for name, column in columns.items():
        values = await session.scalars(
            select(column).where(TaskLog.task_id == task_id, column.is_not(None)).distinct()
        )
        out[name] = sorted(values)
    return out
