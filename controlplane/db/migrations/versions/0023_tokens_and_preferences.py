"""access tokens, the UI's per-user settings, pins and recent projects, the cluster message,
per-task log retention, project notes, task config policies

`user_sessions` gains Determined's token type, a description and a revocation time, so that a
long-lived access token (`det token create`) is a session a user can list and revoke.
`user_settings`, `workspace_pins` and `project_activity` hold what the web UI remembers per
user; `cluster_messages` the banner an admin shows everyone; `tasks.log_retention_days` the
days a trial's or task's logs are kept when a user set it (`det e set log-retention`);
`projects.notes` Determined's project notes; `config_policies` what `det config-policies`
sets.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07 07:10:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0023"
down_revision: str | Sequence[str] | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WHEN = sa.DateTime(timezone=True)
_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _user_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["user_id"], ["users.id"], name=op.f(f"fk_{table}_user_id_users"), ondelete="CASCADE"
    )


def upgrade() -> None:
    with op.batch_alter_table("user_sessions") as batch:
        batch.add_column(
            sa.Column(
                "token_type", sa.String(length=32), nullable=False, server_default="USER_SESSION"
            )
        )
        batch.add_column(sa.Column("description", sa.String(length=1024), nullable=True))
        batch.add_column(sa.Column("revoked_at", _WHEN, nullable=True))
    op.create_index(
        "ix_user_sessions_user_id_token_type", "user_sessions", ["user_id", "token_type"]
    )
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("log_retention_days", sa.Integer(), nullable=True))
    with op.batch_alter_table("projects") as batch:
        batch.add_column(sa.Column("notes", _JSON, nullable=True))
    op.create_table(
        "user_settings",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("storage_path", sa.String(length=255), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        _user_fk("user_settings"),
        sa.PrimaryKeyConstraint("user_id", "storage_path", "key", name=op.f("pk_user_settings")),
    )
    op.create_table(
        "workspace_pins",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("workspace_id", sa.Integer(), nullable=False),
        sa.Column("pinned_at", _WHEN, nullable=False),
        _user_fk("workspace_pins"),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workspace_pins_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "workspace_id", name=op.f("pk_workspace_pins")),
    )
    op.create_table(
        "project_activity",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("at", _WHEN, nullable=False),
        _user_fk("project_activity"),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_project_activity_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "project_id", name=op.f("pk_project_activity")),
    )
    op.create_index("ix_project_activity_user_id_at", "project_activity", ["user_id", "at"])
    op.create_table(
        "config_policies",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("workspace_id", sa.Integer(), nullable=True),
        sa.Column("workload_type", sa.String(length=16), nullable=False),
        sa.Column("policy", _JSON, nullable=False),
        sa.Column("updated_by", sa.Integer(), nullable=True),
        sa.Column("updated_at", _WHEN, nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_config_policies_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["updated_by"],
            ["users.id"],
            name=op.f("fk_config_policies_updated_by_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_config_policies")),
    )
    op.create_index(
        "ix_config_policies_scope",
        "config_policies",
        ["workspace_id", "workload_type"],
        unique=True,
    )
    op.create_table(
        "cluster_messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("start_time", _WHEN, nullable=False),
        sa.Column("end_time", _WHEN, nullable=True),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_cluster_messages_created_by_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cluster_messages")),
    )


def downgrade() -> None:
    op.drop_index("ix_config_policies_scope", table_name="config_policies")
    op.drop_table("config_policies")
    op.drop_table("cluster_messages")
    op.drop_index("ix_project_activity_user_id_at", table_name="project_activity")
    op.drop_table("project_activity")
    op.drop_table("workspace_pins")
    op.drop_table("user_settings")
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("log_retention_days")
    with op.batch_alter_table("projects") as batch:
        batch.drop_column("notes")
    op.drop_index("ix_user_sessions_user_id_token_type", table_name="user_sessions")
    with op.batch_alter_table("user_sessions") as batch:
        batch.drop_column("revoked_at")
        batch.drop_column("description")
        batch.drop_column("token_type")
