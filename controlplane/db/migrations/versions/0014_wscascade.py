"""workspaces and projects: deletion state; interactive tasks: the persisted idle clock

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 08:30:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    for table in ("workspaces", "projects"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(
                sa.Column(
                    "state", sa.String(length=32), nullable=False, server_default="UNSPECIFIED"
                )
            )
            batch.add_column(sa.Column("error_message", sa.Text(), nullable=True))
    with op.batch_alter_table("commands") as batch:
        batch.add_column(sa.Column("last_activity_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("commands") as batch:
        batch.drop_column("last_activity_at")
    for table in ("projects", "workspaces"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("error_message")
            batch.drop_column("state")
