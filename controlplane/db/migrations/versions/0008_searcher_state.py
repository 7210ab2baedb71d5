"""searcher state: the searcher's snapshot and the experiment lifecycle columns

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 04:30:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain JSON (text) on PostgreSQL too: the snapshot is written whole with every searcher
    # decision and never queried into, so JSONB's parsing would be pure cost.
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("searcher_snapshot", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("searcher_token", sa.String(length=32), nullable=True))
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("paused_by_searcher", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(sa.Column("best_searcher_metric", sa.Double(), nullable=True))
        batch_op.create_unique_constraint(
            batch_op.f("uq_trials_experiment_id_request_id"), ["experiment_id", "request_id"]
        )


def downgrade() -> None:
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_trials_experiment_id_request_id"), type_="unique")
        batch_op.drop_column("best_searcher_metric")
        batch_op.drop_column("paused_by_searcher")
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.drop_column("searcher_token")
        batch_op.drop_column("searcher_snapshot")
