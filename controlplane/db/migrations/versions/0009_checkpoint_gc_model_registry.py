"""checkpoint GC records: user protection, requested and failed deletions, pending GC runs

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 04:30:00.000000

(The model registry tables are in 0010.)
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[object]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("checkpoints", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("protected", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(
            sa.Column("delete_requested_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(sa.Column("delete_globs", _json(), nullable=True))
        batch_op.add_column(
            sa.Column("delete_attempts", sa.Integer(), nullable=False, server_default="0")
        )
        batch_op.add_column(sa.Column("delete_error", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("delete_retry_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index("ix_checkpoints_delete_requested_at", ["delete_requested_at"])
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("gc_requested_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("experiments", schema=None) as batch_op:
        batch_op.drop_column("gc_requested_at")
    with op.batch_alter_table("checkpoints", schema=None) as batch_op:
        batch_op.drop_index("ix_checkpoints_delete_requested_at")
        for name in (
            "deleted_at",
            "delete_retry_at",
            "delete_error",
            "delete_attempts",
            "delete_globs",
            "delete_requested_at",
            "protected",
        ):
            batch_op.drop_column(name)
