"""A container's id: its allocation's id and its rank in it (``"<allocation>-<rank>"``).

The scheduler names the containers it starts so; the agent events, the task views and the
placements read them back. Pure, so that none of them needs the scheduling package for it.
"""

from __future__ import annotations


def container_id(allocation_id: str, rank: int) -> str:
    return f"{allocation_id}-{rank}"


def split_container_id(container_id: str) -> tuple[str, int | None]:
    """``"<allocation>-<rank>"`` → (allocation, rank); an id of another shape is its own."""
    head, _, rank = container_id.rpartition("-")
    return (head, int(rank)) if head and rank.isascii() and rank.isdigit() else (container_id, None)
