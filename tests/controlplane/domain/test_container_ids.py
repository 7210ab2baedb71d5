"""controlplane/domain/container_ids.py: a container's id, made and read back."""

from __future__ import annotations

import pytest

from controlplane.domain.container_ids import container_id, split_container_id


@pytest.mark.parametrize(
    ("container_id", "parts"),
    [
        ("alloc.1-0", ("alloc.1", 0)),
        ("alloc.1-12", ("alloc.1", 12)),
        ("alloc-1.1-3", ("alloc-1.1", 3)),
        ("plain", ("plain", None)),
        ("-3", ("-3", None)),
        ("alloc.1-", ("alloc.1-", None)),
        ("alloc.1-x", ("alloc.1-x", None)),
        ("alloc.1-\u00b9", ("alloc.1-\u00b9", None)),  # a digit to str.isdigit(), not to int()
        ("alloc.1-\u0663", ("alloc.1-\u0663", None)),
    ],
)
def test_split_container_id(container_id: str, parts: tuple[str, int | None]) -> None:
    assert split_container_id(container_id) == parts


@pytest.mark.parametrize("allocation_id", ["alloc.1", "alloc-1.1", "3f2a-b.7"])
@pytest.mark.parametrize("rank", [0, 1, 12])
def test_an_id_made_is_read_back(allocation_id: str, rank: int) -> None:
    assert split_container_id(container_id(allocation_id, rank)) == (allocation_id, rank)
