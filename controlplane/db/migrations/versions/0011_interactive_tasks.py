"""interactive tasks: notebooks, TensorBoards and shells

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26 04:30:00.000000

An allocation records where its service answers (`proxy_address`, host:port, set by the task
through POST /api/v1/allocations/{id}/proxy_address); a shell keeps the private half of the key
pair the master made for it (`commands.private_key`; the public half is in its config).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("allocations") as batch:
        batch.add_column(sa.Column("proxy_address", sa.String(length=255), nullable=True))
    with op.batch_alter_table("commands") as batch:
        batch.add_column(sa.Column("private_key", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("commands") as batch:
        batch.drop_column("private_key")
    with op.batch_alter_table("allocations") as batch:
        batch.drop_column("proxy_address")
