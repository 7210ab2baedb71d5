"""generic tasks and detached runs (issue 39, lane tasks)

`generic_tasks`: what a generic task (`det task create`, POST /api/v1/generic-tasks) has beyond
the command row it runs through: its project, the task it was forked from, its parent, the config
as sent and whether it may be paused.
`experiments.unmanaged`, `experiments.external_experiment_id`, `trials.external_trial_id`,
`trials.last_activity`: detached (unmanaged) runs, reported by core_v2 off the cluster, named
by their own ids, and ended in ERROR when their heartbeats stop.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07 07:00:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "generic_tasks",
        sa.Column("task_id", sa.String(length=128), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=True),
        sa.Column("forked_from", sa.String(length=128), nullable=True),
        sa.Column("parent_id", sa.String(length=128), nullable=True),
        sa.Column("config", _JSON, nullable=False),
        sa.Column("no_pause", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_generic_tasks_project_id_projects"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.task_id"],
            name=op.f("fk_generic_tasks_task_id_tasks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("task_id", name=op.f("pk_generic_tasks")),
    )
    op.create_index(op.f("ix_generic_tasks_parent_id"), "generic_tasks", ["parent_id"])
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(
            sa.Column("unmanaged", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch.add_column(sa.Column("external_experiment_id", sa.String(length=255), nullable=True))
        batch.create_unique_constraint(
            op.f("uq_experiments_external_experiment_id"), ["external_experiment_id"]
        )
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("external_trial_id", sa.String(length=255), nullable=True))
        batch.add_column(sa.Column("last_activity", sa.DateTime(timezone=True), nullable=True))
        batch.create_unique_constraint(
            op.f("uq_trials_experiment_id_external_trial_id"),
            ["experiment_id", "external_trial_id"],
        )


def downgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.drop_constraint(op.f("uq_trials_experiment_id_external_trial_id"), type_="unique")
        batch.drop_column("last_activity")
        batch.drop_column("external_trial_id")
    with op.batch_alter_table("experiments") as batch:
        batch.drop_constraint(op.f("uq_experiments_external_experiment_id"), type_="unique")
        batch.drop_column("external_experiment_id")
        batch.drop_column("unmanaged")
    op.drop_index(op.f("ix_generic_tasks_parent_id"), table_name="generic_tasks")
    op.drop_table("generic_tasks")
