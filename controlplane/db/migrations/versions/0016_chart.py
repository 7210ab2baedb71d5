"""metric_rollups: per-metric min/max/last of aligned step buckets, backfilled from the reports

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 08:20:00.000000

"""

import json
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from controlplane.domain.series_rollup import MARKER_LEVEL, rollup

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ROLLUPS = sa.table(
    "metric_rollups",
    *(
        sa.column(c)
        for c in (
            "trial_id", "group", "level", "name", "start", "min_step", "min_value",
            "max_step", "max_value", "last_step", "last_value",
        )
    ),
)  # fmt: skip
METRICS = sa.table(
    "metrics",
    sa.column("id"),
    sa.column("trial_id"),
    sa.column("group"),
    sa.column("total_batches"),
    sa.column("metrics", sa.JSON),
    sa.column("archived"),
)


def _avg(body: Any) -> dict[str, Any]:
    if isinstance(body, str | bytes):
        body = json.loads(body)
    return (body or {}).get("avg_metrics") or {}


def _rows(trial: int, reports: dict[str, list[tuple[int, Any]]]) -> Iterator[dict[str, Any]]:
    for group, items in reports.items():
        summaries = rollup(items)
        if summaries is None:  # too many names to roll up: charts read the reports
            yield {"trial_id": trial, "group": group, "level": MARKER_LEVEL, "name": "",
                   "start": 0, "min_step": None, "min_value": None, "max_step": None,
                   "max_value": None, "last_step": 0, "last_value": None}  # fmt: skip
            continue
        for (name, level, start), s in summaries.items():
            yield {"trial_id": trial, "group": group, "level": level, "name": name,
                   "start": start, "min_step": s.min_step, "min_value": s.min_value,
                   "max_step": s.max_step, "max_value": s.max_value,
                   "last_step": s.last_step, "last_value": s.last_value}  # fmt: skip


def _backfill(conn: sa.Connection) -> None:
    """Every trial's live reports, one trial at a time, in the order they were stored (the
    same `rollup` the master runs at ingest, so old and new rollups agree)."""
    trials = conn.execute(
        sa.select(METRICS.c.trial_id).where(METRICS.c.archived.is_(False)).distinct()
    ).scalars()
    for trial in sorted(trials):
        reports: dict[str, list[tuple[int, Any]]] = {}
        rows = conn.execute(
            sa.select(METRICS.c.group, METRICS.c.total_batches, METRICS.c.metrics)
            .where(METRICS.c.trial_id == trial, METRICS.c.archived.is_(False))
            .order_by(METRICS.c.id)
        )
        for group, steps, body in rows:
            reports.setdefault(group, []).append((steps, _avg(body)))
        batch: list[dict[str, Any]] = []
        for row in _rows(trial, reports):
            batch.append(row)
            if len(batch) >= 5000:
                conn.execute(ROLLUPS.insert(), batch)
                batch = []
        if batch:
            conn.execute(ROLLUPS.insert(), batch)


def upgrade() -> None:
    op.create_table(
        "metric_rollups",
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("group", sa.String(length=128), nullable=False),
        sa.Column("level", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("start", sa.Integer(), nullable=False),
        sa.Column("min_step", sa.Integer(), nullable=True),
        sa.Column("min_value", sa.Float(), nullable=True),
        sa.Column("max_step", sa.Integer(), nullable=True),
        sa.Column("max_value", sa.Float(), nullable=True),
        sa.Column("last_step", sa.Integer(), nullable=False),
        sa.Column("last_value", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["trial_id"],
            ["trials.id"],
            name=op.f("fk_metric_rollups_trial_id_trials"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "trial_id", "group", "level", "name", "start", name=op.f("pk_metric_rollups")
        ),
    )
    _backfill(op.get_bind())


def downgrade() -> None:
    op.drop_table("metric_rollups")
