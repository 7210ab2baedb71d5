"""agent user group: the Unix user and group a user's tasks run as on the agents

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 02:00:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = ("agent_uid", "agent_gid", "agent_user", "agent_group")


def upgrade() -> None:
    # Nullable: existing users are unlinked (their tasks run as security.default_task_user).
    # uids and gids are unsigned 32-bit on Linux: BIGINT holds every one of them.
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("agent_uid", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("agent_gid", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("agent_user", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("agent_group", sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        for name in reversed(_COLUMNS):
            batch_op.drop_column(name)
