"""tasks: an index on (task_type, end_time), so the scheduling pass finds the open commands
without reading every task the cluster ever ran

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 04:10:00.000000

"""

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_tasks_type_end_time", "tasks", ["task_type", "end_time"])


def downgrade() -> None:
    op.drop_index("ix_tasks_type_end_time", table_name="tasks")
