"""workspace <-> resource pool bindings and per-workspace slot quotas per pool

`rp_workspace_bindings`: a pool with rows is usable only by the workspaces it names (Determined's
bindings). `workspace_pool_quotas`: the most slots a workspace's jobs hold in a pool at once.
Both go with their workspace.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 09:00:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rp_workspace_bindings",
        sa.Column("resource_pool", sa.String(length=255), nullable=False),
        sa.Column("workspace_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_rp_workspace_bindings_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "resource_pool", "workspace_id", name=op.f("pk_rp_workspace_bindings")
        ),
    )
    op.create_index(
        op.f("ix_rp_workspace_bindings_workspace_id"),
        "rp_workspace_bindings",
        ["workspace_id"],
    )
    op.create_table(
        "workspace_pool_quotas",
        sa.Column("workspace_id", sa.Integer(), nullable=False),
        sa.Column("resource_pool", sa.String(length=255), nullable=False),
        sa.Column("max_slots", sa.Integer(), nullable=False),
        sa.CheckConstraint(
            "max_slots >= 0", name=op.f("ck_workspace_pool_quotas_max_slots_not_negative")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_pool_quotas_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "workspace_id", "resource_pool", name=op.f("pk_workspace_pool_quotas")
        ),
    )


def downgrade() -> None:
    op.drop_table("workspace_pool_quotas")
    op.drop_index(op.f("ix_rp_workspace_bindings_workspace_id"), table_name="rp_workspace_bindings")
    op.drop_table("rp_workspace_bindings")
