"""commands: the config, state, exit and context directory of `det cmd run` tasks

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 10:00:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json_type = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
    op.create_table(
        "commands",
        sa.Column("task_id", sa.String(length=128), nullable=False),
        sa.Column("workspace_id", sa.Integer(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("config", json_type, nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("exit_status", sa.Text(), nullable=True),
        sa.Column("context", sa.LargeBinary(), nullable=True),
        sa.Column("context_files", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.task_id"],
            name=op.f("fk_commands_task_id_tasks"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_commands_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("task_id", name=op.f("pk_commands")),
    )
    with op.batch_alter_table("commands", schema=None) as batch_op:
        batch_op.create_index("ix_commands_workspace_id_state", ["workspace_id", "state"])


def downgrade() -> None:
    with op.batch_alter_table("commands", schema=None) as batch_op:
        batch_op.drop_index("ix_commands_workspace_id_state")
    op.drop_table("commands")
