"""cost accounting (issue 43): the instances provisioners launched, their price and their life

`provisioner_instances`: one row per machine a pool's provisioner launched (pool, instance id),
the agent it runs, the offer and hourly price it is charged at, launch and end times. What
allocations on that agent are charged a share of (controlplane/domain/cost.py).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07 07:00:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "provisioner_instances",
        sa.Column("pool", sa.String(length=255), nullable=False),
        sa.Column("instance_id", sa.String(length=255), nullable=False),
        sa.Column("agent_name", sa.String(length=255), nullable=False),
        sa.Column("offer_key", sa.String(length=512), nullable=True),
        sa.Column("instance_type", sa.String(length=255), nullable=False),
        sa.Column("spot", sa.Boolean(), nullable=False),
        sa.Column("slots", sa.Integer(), nullable=False),
        sa.Column("price_per_hour", sa.Double(), nullable=False),
        sa.Column("launched_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("pool", "instance_id", name=op.f("pk_provisioner_instances")),
    )
    op.create_index(
        op.f("ix_provisioner_instances_agent_name"), "provisioner_instances", ["agent_name"]
    )
    op.create_index(
        op.f("ix_provisioner_instances_pool_ended_at"),
        "provisioner_instances",
        ["pool", "ended_at"],
    )


def downgrade() -> None:
    op.drop_index(
        op.f("ix_provisioner_instances_pool_ended_at"), table_name="provisioner_instances"
    )
    op.drop_index(op.f("ix_provisioner_instances_agent_name"), table_name="provisioner_instances")
    op.drop_table("provisioner_instances")
