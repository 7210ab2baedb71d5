"""A trial's metric series for charts, reduced to min, max and last per step bucket.

Windows that hold few points come back whole. Bigger ones are reduced: on PostgreSQL in one
aggregate pass (`min(ARRAY[value, step])` is the minimum and its first step; `max(ARRAY[value,
-step])` the maximum and its first step; `max(ARRAY[step, value])` the last point), so 100,000
reports never travel to Python; on SQLite by `domain.series_reduction` over the rows. Both keep
the same points: per metric, the first minimum, the first maximum and the last point of each
bucket of `domain.series_reduction.reduce_series`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, bindparam, func, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Metric
from controlplane.domain.series_reduction import POINTS_PER_BUCKET, reduce_series

NAME_SAMPLE = 100


@dataclass
class Point:
    steps: int
    time: datetime | None = None
    epoch: float | None = None
    values: dict[str, Any] = field(default_factory=dict)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _window(trial_id: int, group: str, lo: int | None, hi: int | None) -> list[Any]:
    clauses = [Metric.trial_id == trial_id, Metric.group == group, Metric.archived.is_(False)]
    if lo is not None:
        clauses.append(Metric.total_batches >= lo)
    if hi is not None:
        clauses.append(Metric.total_batches <= hi)
    return clauses


async def _names(session: AsyncSession, where: list[Any]) -> list[str]:
    """The metric names of the window's first and last reports (reading every report's keys
    would cost as much as the series itself)."""
    names: set[str] = set()
    for order in (Metric.total_batches.asc(), Metric.total_batches.desc()):
        rows = await session.scalars(
            select(Metric.metrics).where(*where).order_by(order).limit(NAME_SAMPLE)
        )
        for body in rows:
            names.update(k for k in ((body or {}).get("avg_metrics") or {}) if k != "epoch")
    return sorted(names)


async def _all(session: AsyncSession, where: list[Any], names: list[str]) -> list[Point]:
    rows = await session.execute(
        select(Metric.total_batches, Metric.end_time, Metric.metrics)
        .where(*where)
        .order_by(Metric.total_batches, Metric.id)
    )
    out = []
    for steps, end, body in rows.all():
        avg = (body or {}).get("avg_metrics") or {}
        values = {n: avg[n] for n in names if n in avg}
        out.append(Point(steps, end, _number(avg.get("epoch")), values))
    return out


def _reduce_rows(points: list[Point], names: list[str], buckets: int) -> list[Point]:
    steps = [p.steps for p in points]
    keep: dict[int, Point] = {}
    for name in names:
        column = [_number(p.values.get(name)) for p in points]
        for i in reduce_series(steps, column, buckets=buckets):
            src = points[i]
            held = keep.setdefault(i, Point(src.steps, src.time, src.epoch))
            if name in src.values:
                held.values[name] = src.values[name]
    return [keep[i] for i in sorted(keep)]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _pg_sql(names: list[str]) -> str:
    """The one-pass reduction. `jsonb_to_record` parses each report once for every metric (an
    `->` per metric costs a lookup each, ten times slower at ten metrics); the MATERIALIZED CTE
    keeps PostgreSQL from repeating the extraction inside every aggregate."""
    record = ", ".join(f"{_quoted(n)} jsonb" for n in names)
    values = ", ".join(
        f"CASE WHEN jsonb_typeof(r.{_quoted(n)}) = 'number' THEN (r.{_quoted(n)})::float8 END"
        f" AS v{k}"
        for k, n in enumerate(names)
    )
    aggs = ", ".join(
        f"min(ARRAY[v{k}, s]) FILTER (WHERE v{k} IS NOT NULL), "
        f"max(ARRAY[v{k}, -s]) FILTER (WHERE v{k} IS NOT NULL), "
        f"max(ARRAY[s, v{k}])"
        for k in range(len(names))
    )
    return (
        "WITH v AS MATERIALIZED ("
        " SELECT total_batches::float8 AS s, (total_batches - :lo) * :buckets / :span AS bucket,"
        f" {values}"
        f" FROM metrics, jsonb_to_record(metrics->'avg_metrics') AS r({record})"
        ' WHERE trial_id = :trial AND "group" = :grp AND NOT archived'
        " AND total_batches BETWEEN :lo AND :hi)"
        f" SELECT bucket, {aggs} FROM v GROUP BY bucket"
    )


def pg_names_ok(names: list[str]) -> bool:
    """Names PostgreSQL can take as record columns whole (identifiers are cut at 63 bytes)."""
    return all(0 < len(n.encode()) <= 63 and "\x00" not in n for n in names)


async def _reduce_pg(
    session: AsyncSession,
    where: list[Any],
    names: list[str],
    key: tuple[int, str, int, int],
    buckets: int,
) -> list[Point]:
    trial_id, group, lo, hi = key
    params: dict[str, Any] = {
        "trial": trial_id,
        "grp": group,
        "lo": lo,
        "hi": hi,
        "buckets": buckets,
    }
    params["span"] = hi - lo + 1
    rows = (await session.execute(text(_pg_sql(names)), params)).all()
    keep: dict[int, Point] = {}
    for row in rows:
        for k, name in enumerate(names):
            low, high, last = row[1 + 3 * k], row[2 + 3 * k], row[3 + 3 * k]
            if low is not None:
                keep.setdefault(int(low[1]), Point(int(low[1]))).values[name] = low[0]
            if high is not None:
                keep.setdefault(int(-high[1]), Point(int(-high[1]))).values[name] = high[0]
            point = keep.setdefault(int(last[0]), Point(int(last[0])))
            if last[1] is not None:
                point.values[name] = last[1]
    step = Metric.total_batches
    times = await session.execute(
        select(step, func.min(Metric.end_time))
        .where(*where, step == func.any(bindparam("steps", type_=ARRAY(Integer))))
        .group_by(step),
        {"steps": list(keep)},
    )
    for at, end in times.all():
        keep[at].time = end
    return [keep[at] for at in sorted(keep)]


async def series(
    session: AsyncSession,
    trial_id: int,
    group: str,
    names: list[str],
    *,
    lo: int | None,
    hi: int | None,
    max_points: int,
) -> list[Point]:
    """The points to draw of one trial's `group` reports in [lo, hi]."""
    where = _window(trial_id, group, lo, hi)
    first, last, count = (
        await session.execute(
            select(
                func.min(Metric.total_batches), func.max(Metric.total_batches), func.count()
            ).where(*where)
        )
    ).one()
    if not count:
        return []
    wanted = names or await _names(session, where)
    buckets = max(1, max_points // POINTS_PER_BUCKET)
    if count <= POINTS_PER_BUCKET * buckets:
        return await _all(session, where, wanted)
    if session.bind.dialect.name == "postgresql" and wanted and pg_names_ok(wanted):
        return await _reduce_pg(session, where, wanted, (trial_id, group, first, last), buckets)
    return _reduce_rows(await _all(session, where, wanted), wanted, buckets)
