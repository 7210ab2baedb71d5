"""web UI: indexes and columns the experiment list and metric series need

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 04:30:00.000000

"""

from collections.abc import Sequence

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
