"""searcher state: the searcher's snapshot and the experiment lifecycle columns

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 04:30:00.000000

"""

from collections.abc import Sequence

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
