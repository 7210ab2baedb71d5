"""workspaces and projects beyond the default ones; the model registry

Workspaces gain a default checkpoint storage (merged under experiment configs) and default
pools; `models` and `model_versions` hold the registry, each version naming a checkpoint.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 04:30:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _stamps() -> list[sa.Column[object]]:
    return [
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    ]


def upgrade() -> None:
    with op.batch_alter_table("workspaces", schema=None) as batch_op:
        batch_op.add_column(sa.Column("checkpoint_storage_config", _JSON, nullable=True))
        batch_op.add_column(sa.Column("default_compute_pool", sa.String(255), nullable=True))
        batch_op.add_column(sa.Column("default_aux_pool", sa.String(255), nullable=True))
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("labels", _JSON, nullable=False),
        sa.Column("metadata", _JSON, nullable=False),
        sa.Column("workspace_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        *_stamps(),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_models_user_id_users")),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_models_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_models")),
        sa.UniqueConstraint("name", name=op.f("uq_models_name")),
    )
    op.create_table(
        "model_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("checkpoint_uuid", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("labels", _JSON, nullable=False),
        sa.Column("metadata", _JSON, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        *_stamps(),
        sa.ForeignKeyConstraint(
            ["checkpoint_uuid"],
            ["checkpoints.uuid"],
            name=op.f("fk_model_versions_checkpoint_uuid_checkpoints"),
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_model_versions_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_model_versions_user_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_versions")),
        sa.UniqueConstraint("model_id", "version", name=op.f("uq_model_versions_model_id_version")),
    )
    op.create_index(
        op.f("ix_model_versions_model_id"), "model_versions", ["model_id"], unique=False
    )
    op.create_index(
        op.f("ix_model_versions_checkpoint_uuid"),
        "model_versions",
        ["checkpoint_uuid"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_model_versions_checkpoint_uuid"), table_name="model_versions")
    op.drop_index(op.f("ix_model_versions_model_id"), table_name="model_versions")
    op.drop_table("model_versions")
    op.drop_table("models")
    with op.batch_alter_table("workspaces", schema=None) as batch_op:
        batch_op.drop_column("default_aux_pool")
        batch_op.drop_column("default_compute_pool")
        batch_op.drop_column("checkpoint_storage_config")
