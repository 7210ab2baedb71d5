"""scheduling: jobs, task requests, placements

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 18:13:46.120100

"""

import json
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

POSITION_SPACING = 1024  # as controlplane.services.jobs


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("job_id", sa.String(length=64), nullable=False),
        sa.Column("job_type", sa.String(length=32), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("workspace_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=512), nullable=False),
        sa.Column("entity_id", sa.String(length=64), nullable=False),
        sa.Column("resource_pool", sa.String(length=255), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=True),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("max_slots", sa.Integer(), nullable=True),
        sa.Column(
            "queue_position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], name=op.f("fk_jobs_owner_id_users")),
        sa.PrimaryKeyConstraint("job_id", name=op.f("pk_jobs")),
    )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.create_index(
            "ix_jobs_resource_pool_queue_position", ["resource_pool", "queue_position"]
        )

    json_type = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
    with op.batch_alter_table("allocations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("placement", json_type, nullable=False, server_default=sa.text("'{}'"))
        )
        batch_op.add_column(sa.Column("exit_reason", sa.Text(), nullable=True))
        batch_op.create_index(
            "ix_allocations_resource_pool_end_time", ["resource_pool", "end_time"]
        )
        batch_op.create_index("ix_allocations_task_id_end_time", ["task_id", "end_time"])

    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("slots", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )
        batch_op.add_column(
            sa.Column("single_node", sa.Boolean(), nullable=False, server_default=sa.false())
        )

    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.create_index("ix_trials_state", ["state"])

    _backfill_jobs()


def _backfill_jobs() -> None:
    """Experiments created before this revision get their job row and task requests."""
    bind = op.get_bind()
    rows = bind.execute(
        sa.text(
            "SELECT e.id, e.job_id, e.owner_id, p.workspace_id, e.name, e.resource_pool,"
            " e.config, e.start_time FROM experiments e JOIN projects p ON p.id = e.project_id"
        )
    ).all()
    for exp_id, job_id, owner_id, workspace_id, name, pool, config, start in rows:
        cfg = json.loads(config) if isinstance(config, str) else (config or {})
        resources = cfg.get("resources") or {}
        if isinstance(start, str):
            start = datetime.fromisoformat(start)
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        bind.execute(
            sa.text(
                "INSERT INTO jobs (job_id, job_type, owner_id, workspace_id, name, entity_id,"
                " resource_pool, priority, weight, max_slots, queue_position, submitted_at)"
                " VALUES (:job_id, 'EXPERIMENT', :owner, :ws, :name, :entity, :pool, :priority,"
                " :weight, :max_slots, :position, :submitted)"
            ),
            {
                "job_id": job_id,
                "owner": owner_id,
                "ws": workspace_id,
                "name": name,
                "entity": str(exp_id),
                "pool": pool or "default",
                "priority": resources.get("priority"),
                "weight": float(resources.get("weight") or 1.0),
                "max_slots": resources.get("max_slots"),
                "position": int(start.timestamp() * 1_000_000) * POSITION_SPACING,
                "submitted": start,
            },
        )
        bind.execute(
            sa.text("UPDATE tasks SET slots = :slots, single_node = :single WHERE job_id = :job"),
            {
                "slots": int(resources.get("slots_per_trial") or 1),
                "single": bool(resources.get("is_single_node")),
                "job": job_id,
            },
        )
        if not pool:
            bind.execute(
                sa.text("UPDATE experiments SET resource_pool = 'default' WHERE id = :id"),
                {"id": exp_id},
            )


def downgrade() -> None:
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.drop_index("ix_trials_state")

    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_column("single_node")
        batch_op.drop_column("slots")

    with op.batch_alter_table("allocations", schema=None) as batch_op:
        batch_op.drop_index("ix_allocations_task_id_end_time")
        batch_op.drop_index("ix_allocations_resource_pool_end_time")
        batch_op.drop_column("exit_reason")
        batch_op.drop_column("placement")

    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_jobs_resource_pool_queue_position")

    op.drop_table("jobs")
