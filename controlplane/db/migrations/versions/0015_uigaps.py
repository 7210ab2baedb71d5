"""web UI: trial_hparams, the trials' sampled hyperparameters as indexed rows

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 08:10:00.000000

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from controlplane.domain.hparam_values import flatten_hparams

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 2000


def upgrade() -> None:
    table = op.create_table(
        "trial_hparams",
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Double(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name=op.f("fk_trial_hparams_experiment_id_experiments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["trial_id"],
            ["trials.id"],
            name=op.f("fk_trial_hparams_trial_id_trials"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("trial_id", "name", name=op.f("pk_trial_hparams")),
    )
    op.create_index(
        "ix_trial_hparams_name_number", "trial_hparams", ["name", "number", "experiment_id"]
    )
    # Backfill from the trials' JSON, a batch at a time (a large master has 100,000s of trials).
    conn = op.get_bind()
    trials = sa.table(
        "trials", sa.column("id"), sa.column("experiment_id"), sa.column("hparams", sa.JSON())
    )
    last = 0
    while True:
        rows = conn.execute(
            sa.select(trials.c.id, trials.c.experiment_id, trials.c.hparams)
            .where(trials.c.id > last)
            .order_by(trials.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            break
        values = [
            {
                "trial_id": tid,
                "name": v.name,
                "experiment_id": eid,
                "number": v.number,
                "text": v.text,
            }
            for tid, eid, hparams in rows
            for v in flatten_hparams(hparams or {})
        ]
        if values:
            conn.execute(sa.insert(table), values)
        last = rows[-1][0]


def downgrade() -> None:
    op.drop_index("ix_trial_hparams_name_number", table_name="trial_hparams")
    op.drop_table("trial_hparams")
