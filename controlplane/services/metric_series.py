"""A trial's metric series for charts, reduced to min, max and last per step bucket.

Windows that hold few points come back whole. Bigger ones are reduced to aligned buckets of a
power-of-two width (`domain.series_reduction`), read from the rollups kept at ingest
(`domain.series_rollup`, table `metric_rollups`): a zoomed-out chart of 100,000 reports reads
at most two rollups per metric and bucket, plus the reports in the part-buckets at a zoomed
window's edges. Buckets narrower than the finest rollup, and groups marked as not rolled up,
are reduced from the reports: on PostgreSQL in one aggregate pass (`min(ARRAY[value, step])` is
the minimum and its first step; `max(ARRAY[value, -step])` the maximum and its first step;
`max(ARRAY[step, value])` the last point), on SQLite by `domain.series_reduction` over the rows.
All paths keep the same points: per metric, the first minimum, the first maximum and the last
report carrying it of each bucket of `domain.series_reduction.reduce_series`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, bindparam, func, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Metric, MetricRollup
from controlplane.domain import series_rollup
from controlplane.domain.series_reduction import POINTS_PER_BUCKET, bucket_width, reduce_aligned
from controlplane.services.dialect import json_number

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


def _reduce_rows(points: list[Point], names: list[str], width: int) -> list[Point]:
    keep: dict[int, Point] = {}
    for name in names:
        carrying = [p for p in points if name in p.values]
        steps = [p.steps for p in carrying]
        column = [_number(p.values[name]) for p in carrying]
        for i in reduce_aligned(steps, column, width=width):
            src = carrying[i]
            held = keep.setdefault(id(src), Point(src.steps, src.time, src.epoch))
            held.values[name] = src.values[name]
    return sorted(keep.values(), key=lambda p: p.steps)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _pg_sql(names: list[str]) -> str:
    """The one-pass reduction. `jsonb_to_record` parses each report once for every metric (an
    `->` per metric costs a lookup each, ten times slower at ten metrics); the MATERIALIZED CTE
    keeps PostgreSQL from repeating the extraction inside every aggregate. A key the report
    lacks comes out as SQL NULL (JSON null as jsonb 'null'): `c{k}` is whether it carries it."""
    record = ", ".join(f"{_quoted(n)} jsonb" for n in names)
    values = ", ".join(
        f"CASE WHEN jsonb_typeof(r.{_quoted(n)}) = 'number' THEN (r.{_quoted(n)})::float8 END"
        f" AS v{k}, r.{_quoted(n)} IS NOT NULL AS c{k}"
        for k, n in enumerate(names)
    )
    aggs = ", ".join(
        f"min(ARRAY[v{k}, s]) FILTER (WHERE v{k} IS NOT NULL), "
        f"max(ARRAY[v{k}, -s]) FILTER (WHERE v{k} IS NOT NULL), "
        f"max(ARRAY[s, v{k}]) FILTER (WHERE c{k})"
        for k in range(len(names))
    )
    return (
        "WITH v AS MATERIALIZED ("
        " SELECT total_batches::float8 AS s, total_batches / :width AS bucket,"
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
    session: AsyncSession, names: list[str], key: tuple[int, str, int, int], width: int
) -> dict[int, Point]:
    trial_id, group, lo, hi = key
    params = {"trial": trial_id, "grp": group, "lo": lo, "hi": hi, "width": width}
    rows = (await session.execute(text(_pg_sql(names)), params)).all()
    keep: dict[int, Point] = {}
    for row in rows:
        for k, name in enumerate(names):
            low, high, last = row[1 + 3 * k], row[2 + 3 * k], row[3 + 3 * k]
            if last is None:
                continue  # no report of the bucket carries this metric
            point = keep.setdefault(int(last[0]), Point(int(last[0])))
            if last[1] is not None:
                point.values[name] = last[1]
            if low is not None:
                keep.setdefault(int(low[1]), Point(int(low[1]))).values[name] = low[0]
            if high is not None:
                keep.setdefault(int(-high[1]), Point(int(-high[1]))).values[name] = high[0]
    return keep


async def _stamp(session: AsyncSession, where: list[Any], keep: dict[int, Point]) -> list[Point]:
    """The kept points with their time and epoch (of the step's first report)."""
    step = Metric.total_batches
    epoch = json_number(Metric.metrics["avg_metrics"]["epoch"])
    wanted = (
        step == func.any(bindparam("steps", type_=ARRAY(Integer)))
        if session.bind.dialect.name == "postgresql"
        else step.in_(bindparam("steps", expanding=True))
    )
    times = await session.execute(
        select(step, func.min(Metric.end_time), func.min(epoch))
        .where(*where, wanted)
        .group_by(step),
        {"steps": list(keep)},
    )
    for at, end, first_epoch in times.all():
        keep[at].time = end
        keep[at].epoch = first_epoch
    return [keep[at] for at in sorted(keep)]


async def _marked(session: AsyncSession, trial_id: int, group: str) -> bool:
    """Whether the group has reports that are not rolled up (too many metrics in one)."""
    found = await session.scalar(
        select(MetricRollup.trial_id).where(
            MetricRollup.trial_id == trial_id,
            MetricRollup.group == group,
            MetricRollup.level == series_rollup.MARKER_LEVEL,
        )
    )
    return found is not None


async def _rollup_names(session: AsyncSession, trial_id: int, group: str) -> list[str]:
    """Every metric name of the group, from its coarsest rollups (a few rows per name)."""
    names = await session.scalars(
        select(MetricRollup.name)
        .where(
            MetricRollup.trial_id == trial_id,
            MetricRollup.group == group,
            MetricRollup.level == series_rollup.COARSEST,
        )
        .distinct()
    )
    return sorted(n for n in names if n != "epoch")


async def _from_rollups(
    session: AsyncSession,
    names: list[str],
    key: tuple[int, str, int | None, int | None],
    width: int,
) -> dict[int, Point] | None:
    """The reduction from rollups of level `read_level(width)`; the part-buckets at a given
    window's edges come from the reports in them. None: an edge report is not rolled up."""
    trial_id, group, lo, hi = key
    level = series_rollup.read_level(width)
    rollup = MetricRollup
    clauses = [
        rollup.trial_id == trial_id,
        rollup.group == group,
        rollup.level == level,
        rollup.name.in_(names),
    ]
    edges: list[tuple[int, int]] = []
    if lo is not None:
        body_lo = -(-lo // level) * level
        clauses.append(rollup.start >= body_lo)
        if body_lo > lo:
            edges.append((lo, body_lo - 1 if hi is None else min(body_lo - 1, hi)))
    if hi is not None:
        body_end = (hi + 1) // level * level
        clauses.append(rollup.start < body_end)
        if body_end <= hi:
            edges.append((body_end if lo is None else max(body_end, lo), hi))
    # Core, not the ORM: thousands of plain rows, no entities to build.
    conn = await session.connection()
    rows = await conn.execute(
        select(
            rollup.name,
            rollup.start,
            rollup.min_step,
            rollup.min_value,
            rollup.max_step,
            rollup.max_value,
            rollup.last_step,
            rollup.last_value,
        ).where(*clauses)
    )
    summary = series_rollup.Summary
    parts = [(r[0], r[1], summary(r[2], r[3], r[4], r[5], r[6], r[7])) for r in rows.all()]
    wanted = set(names)
    for first, last in dict.fromkeys(edges):
        reports = await _all(session, _window(trial_id, group, first, last), names)
        summaries = series_rollup.rollup(((p.steps, p.values) for p in reports), (level,))
        if summaries is None:
            return None
        parts.extend((n, start, s) for (n, _, start), s in summaries.items() if n in wanted)
    keep: dict[int, Point] = {}
    drawn = series_rollup.drawn(series_rollup.combine(parts, width))
    for at, values in drawn.items():
        keep[at] = Point(at, values=values)
    return keep


async def _count_upto(session: AsyncSession, where: list[Any], limit: int) -> int:
    """How many reports the window holds, counting no further than `limit`."""
    capped = select(Metric.id).where(*where).limit(limit).subquery()
    return int(await session.scalar(select(func.count()).select_from(capped)) or 0)


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
    first, last = (
        await session.execute(
            select(func.min(Metric.total_batches), func.max(Metric.total_batches)).where(*where)
        )
    ).one()
    if first is None:
        return []
    buckets = max(1, max_points // POINTS_PER_BUCKET)
    if await _count_upto(session, where, POINTS_PER_BUCKET * buckets + 1) <= (
        POINTS_PER_BUCKET * buckets
    ):
        return await _all(session, where, names or await _names(session, where))
    width = bucket_width(first, last, buckets)
    marked = await _marked(session, trial_id, group)
    if not marked and series_rollup.read_level(width) > 1:
        # No rollup names with reports in the window: rows written around the master (a
        # restore, a hand-made seed); reduce the reports themselves rather than show nothing.
        wanted = names or await _rollup_names(session, trial_id, group)
        keep = (
            await _from_rollups(session, wanted, (trial_id, group, lo, hi), width)
            if wanted
            else None
        )
        if keep is not None:
            return await _stamp(session, where, keep)
    wanted = names or await _names(session, where)
    if session.bind.dialect.name == "postgresql" and wanted and pg_names_ok(wanted):
        keep = await _reduce_pg(session, wanted, (trial_id, group, first, last), width)
        return await _stamp(session, where, keep)
    return _reduce_rows(await _all(session, where, wanted), wanted, width)
