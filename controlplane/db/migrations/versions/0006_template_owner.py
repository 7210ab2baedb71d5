"""template owner: who may change or remove a config template (its owner or an admin)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26 01:00:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable: templates made before this have no recorded owner; only admins change those.
    with op.batch_alter_table("templates", schema=None) as batch_op:
        batch_op.add_column(sa.Column("owner_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_templates_owner_id_users"), "users", ["owner_id"], ["id"]
        )


def downgrade() -> None:
    with op.batch_alter_table("templates", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_templates_owner_id_users"), type_="foreignkey")
        batch_op.drop_column("owner_id")
