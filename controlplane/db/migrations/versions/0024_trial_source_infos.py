"""trial source infos: which checkpoint or model version a trial used

Determined's TrialSourceInfo (ReportTrialSourceInfo), read by GetTrialMetricsByCheckpoint and
GetTrialMetricsByModelVersion.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07 07:50:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | Sequence[str] | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "trial_source_infos",
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("checkpoint_uuid", sa.String(length=64), nullable=False),
        sa.Column("source_type", sa.String(length=64), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=True),
        sa.Column("model_version", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["trial_id"],
            ["trials.id"],
            name=op.f("fk_trial_source_infos_trial_id_trials"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["checkpoint_uuid"],
            ["checkpoints.uuid"],
            name=op.f("fk_trial_source_infos_checkpoint_uuid_checkpoints"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_trial_source_infos_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("trial_id", "checkpoint_uuid", name=op.f("pk_trial_source_infos")),
    )
    op.create_index(
        op.f("ix_trial_source_infos_checkpoint_uuid"), "trial_source_infos", ["checkpoint_uuid"]
    )
    op.create_index(
        "ix_trial_source_infos_model_id_model_version",
        "trial_source_infos",
        ["model_id", "model_version"],
    )


def downgrade() -> None:
    op.drop_index("ix_trial_source_infos_model_id_model_version", table_name="trial_source_infos")
    op.drop_index(op.f("ix_trial_source_infos_checkpoint_uuid"), table_name="trial_source_infos")
    op.drop_table("trial_source_infos")
