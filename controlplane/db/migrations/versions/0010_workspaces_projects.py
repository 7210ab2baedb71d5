"""workspaces and projects beyond the default ones

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 04:30:00.000000

"""

from collections.abc import Sequence

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
