"""run metadata: the JSON object the Core API's set_metadata merges into (POST /runs/{id}/metadata)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21 23:10:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json_type = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
    # Nullable: existing trials have none, and GET answers {} for them.
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.add_column(sa.Column("run_metadata", json_type, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trials", schema=None) as batch_op:
        batch_op.drop_column("run_metadata")
