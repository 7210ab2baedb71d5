"""The rollups a chart reads (`metric_rollups`) stay equal to the live reports they summarise,
on both databases: through batched, retried and out-of-order ingest, a trial's rollback, and a
report with too many metrics to roll up; a zoomed window's chart equals the pure reduction."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select

from controlplane.db.models import Metric, MetricRollup, Trial
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.domain import series_rollup
from controlplane.domain.series_reduction import bucket_width, reduce_aligned
from controlplane.services import trials
from tests.conftest import Master
from tests.controlplane.api.test_trial_metrics_api import _report, _trials
from tests.controlplane.api.test_trials_api import report


def _values(step: int) -> dict[str, Any]:
    out: dict[str, Any] = {"loss": ((step * 7919) % 101) / 100.0}
    if step % 3:
        out["acc"] = "NaN" if step % 17 == 0 else step / 1000
    if step == 444:
        out["loss"] = 99.0
    return out


async def _state(db_url: str, trial_id: int) -> tuple[dict, dict, list[tuple[int, dict]]]:
    """(rollups, what rollup() makes of the live reports, the live reports in id order)."""
    engine = make_engine(db_url)
    try:
        async with transaction(make_sessionmaker(engine)) as s:
            stored = await s.execute(select(MetricRollup).where(MetricRollup.trial_id == trial_id))
            got = {
                (r.group, r.name, r.level, r.start): series_rollup.Summary(
                    r.min_step, r.min_value, r.max_step, r.max_value, r.last_step, r.last_value
                )
                for r in stored.scalars()
            }
            rows = await s.execute(
                select(Metric.group, Metric.total_batches, Metric.metrics)
                .where(Metric.trial_id == trial_id, Metric.archived.is_(False))
                .order_by(Metric.id)
            )
            live = [(g, steps, body["avg_metrics"]) for g, steps, body in rows.all()]
    finally:
        await engine.dispose()
    want: dict = {}
    for group in {g for g, _, _ in live}:
        made = series_rollup.rollup([(st, avg) for g, st, avg in live if g == group])
        want.update({(group, *k): v for k, v in (made or {}).items()})
    return got, want, [(st, avg) for g, st, avg in live if g == "training"]


async def _chart(master: Master, trial_id: int, **params: Any) -> list[dict[str, Any]]:
    r = await master.client.get(
        "/api/v1/trials/time-series",
        params={"trialIds": trial_id, "group": "training", **params},
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    return r.json()["trials"][0]["metrics"][0]["data"]


def _expected(live: list[tuple[int, dict]], name: str, lo: int, hi: int, buckets: int) -> dict:
    # In step order; reports of one step stay in the order stored (a stable sort).
    inside = sorted(
        ((st, avg[name]) for st, avg in live if lo <= st <= hi and name in avg),
        key=lambda p: p[0],
    )
    steps = [st for st, _ in inside]
    values = [series_rollup.number(v) for _, v in inside]
    window = [st for st, _ in live if lo <= st <= hi]
    width = bucket_width(min(window), max(window), buckets)
    return {steps[i]: values[i] for i in reduce_aligned(steps, values, width=width)}


def _drawn(data: list[dict[str, Any]], name: str, expected: dict) -> dict:
    return {p["batches"]: p["values"].get(name) for p in data if p["batches"] in expected}


async def test_rollups_follow_ingest_and_rollback(master: Master, db_url: str) -> None:
    t, _ = await _trials(master)
    batches = [list(range(start, start + 50)) for start in range(1, 601, 50)]
    batches.insert(3, batches[1])  # a retried batch
    batches[5], batches[6] = batches[6], batches[5]  # out of order
    for steps in batches:
        await _report(master, t, *(report("training", s, _values(s)) for s in steps))
    await _report(master, t, report("validation", 600, {"loss": 0.5}))
    got, want, live = await _state(db_url, t)
    assert got == want and len(got) > 0

    for lo, hi in ((37, 555), (1, 600), (100, 163)):
        data = await _chart(master, t, maxDatapoints=30, startBatches=lo, endBatches=hi)
        for name in ("loss", "acc"):
            expected = _expected(live, name, lo, hi, 10)
            assert _drawn(data, name, expected) == expected, (lo, hi, name)
        assert max(p["batches"] for p in data) == hi
    data = await _chart(master, t, maxDatapoints=30)
    assert any(p["batches"] == 444 and p["values"]["loss"] == 99.0 for p in data)

    engine = make_engine(db_url)  # the app's engine belongs to the app's event loop
    try:
        async with transaction(make_sessionmaker(engine)) as session:
            trial = await session.get(Trial, t)
            assert trial is not None
            assert await trials.archive_abandoned_metrics(
                session, trial, resume_step=300, config={}
            )
    finally:
        await engine.dispose()
    await _report(master, t, *(report("training", s, {"loss": -1.0}, run=2) for s in (301, 302)))
    got, want, live = await _state(db_url, t)
    assert got == want
    data = await _chart(master, t, maxDatapoints=30)
    expected = _expected(live, "loss", 1, 302, 10)
    assert _drawn(data, "loss", expected) == expected and data[-1]["values"]["loss"] == -1.0


async def test_a_report_with_too_many_metrics_marks_the_group(master: Master, db_url: str) -> None:
    t, _ = await _trials(master)
    wide = {f"m{i}": 1.0 for i in range(series_rollup.MAX_NAMES + 1)}
    await _report(master, t, report("training", 5, {**wide, "loss": 3.0}))
    await _report(master, t, *(report("training", s, _values(s)) for s in range(6, 400)))
    got, _, live = await _state(db_url, t)
    assert ("training", "", series_rollup.MARKER_LEVEL, 0) in got
    data = await _chart(master, t, maxDatapoints=30, metricNames="loss")
    expected = _expected(live, "loss", 5, 399, 10)
    assert _drawn(data, "loss", expected) == expected


async def test_reports_without_rollups_are_reduced_from_the_reports(
    master: Master, db_url: str
) -> None:
    """Rows written around the master (no rollups) still chart, from the reports themselves."""
    t, _ = await _trials(master)
    engine = make_engine(db_url)
    try:
        async with transaction(make_sessionmaker(engine)) as s:
            await s.execute(
                insert(Metric),
                [
                    {
                        "trial_id": t,
                        "trial_run_id": 1,
                        "group": "training",
                        "total_batches": step,
                        "end_time": datetime(2026, 1, 1, tzinfo=UTC),
                        "metrics": {"avg_metrics": _values(step)},
                        "archived": False,
                    }
                    for step in range(1, 400)
                ],
            )
    finally:
        await engine.dispose()
    _, _, live = await _state(db_url, t)
    data = await _chart(master, t, maxDatapoints=30)
    for name in ("loss", "acc"):
        expected = _expected(live, name, 1, 399, 10)
        assert expected and _drawn(data, name, expected) == expected
