"""web UI: indexes and columns the experiment list and metric series need

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 04:30:00.000000

"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_experiments_project_archived_id", "experiments", ["project_id", "archived", "id"]
    )
    op.create_index(
        "ix_trials_experiment_metric", "trials", ["experiment_id", "searcher_metric_value"]
    )


def downgrade() -> None:
    op.drop_index("ix_trials_experiment_metric", table_name="trials")
    op.drop_index("ix_experiments_project_archived_id", table_name="experiments")
