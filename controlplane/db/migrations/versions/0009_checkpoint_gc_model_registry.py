"""checkpoint GC records and the model registry

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 04:30:00.000000

"""

from collections.abc import Sequence

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
