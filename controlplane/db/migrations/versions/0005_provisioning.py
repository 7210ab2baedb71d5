"""provisioning: launch requests stored before the cloud call, scaling decisions, decider timers

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 09:00:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json_type = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
    big_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "provisioner_launches",
        sa.Column("request_id", sa.String(length=64), nullable=False),
        sa.Column("pool", sa.String(length=255), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("instance_ids", json_type, nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("request_id", name=op.f("pk_provisioner_launches")),
    )
    op.create_index("ix_provisioner_launches_pool_state", "provisioner_launches", ["pool", "state"])
    op.create_table(
        "provisioner_events",
        sa.Column("id", big_id, autoincrement=True, nullable=False),
        sa.Column("pool", sa.String(length=255), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("instance_ids", json_type, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_provisioner_events")),
    )
    op.create_index("ix_provisioner_events_pool_id", "provisioner_events", ["pool", "id"])
    op.create_table(
        "provisioner_state",
        sa.Column("pool", sa.String(length=255), nullable=False),
        sa.Column("memory", json_type, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("pool", name=op.f("pk_provisioner_state")),
    )


def downgrade() -> None:
    op.drop_table("provisioner_state")
    op.drop_index("ix_provisioner_events_pool_id", table_name="provisioner_events")
    op.drop_table("provisioner_events")
    op.drop_index("ix_provisioner_launches_pool_state", table_name="provisioner_launches")
    op.drop_table("provisioner_launches")
