"""An experiment's context as Determined's file tree, and one file of it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controlplane.domain.model_def_tree import BINARY, TEXT, Member, build_tree, find_file

MEMBERS = [
    Member("train.py", False, 1_700_000_000, b"print(1)\n"),
    Member("sub", True, 1_700_000_100, b""),
    Member("sub/data.bin", False, 1_700_000_200, b"\x00\x01"),
    Member("deep/er/x.txt", False, 5, "é".encode()),  # parents only implied
]


class TestBuildTree:
    def test_nested_directories_first(self) -> None:
        tree = build_tree(MEMBERS)
        assert [(n.path, n.is_dir) for n in tree] == [
            ("deep", True),
            ("sub", True),
            ("train.py", False),
        ]
        deep, sub, train = tree
        assert [n.path for n in deep.files] == ["deep/er"]
        assert [(n.name, n.content_type) for n in deep.files[0].files] == [("x.txt", TEXT)]
        assert [(n.name, n.content_length, n.content_type) for n in sub.files] == [
            ("data.bin", 2, BINARY)
        ]
        assert sub.content_type == "" and sub.modified_time == datetime.fromtimestamp(
            1_700_000_100, tz=UTC
        )
        assert (train.content_length, train.content_type, train.files) == (9, TEXT, [])

    def test_empty(self) -> None:
        assert build_tree([]) == []


@pytest.mark.parametrize(
    ("path", "found"),
    [
        ("train.py", "train.py"),
        ("./train.py", "train.py"),
        ("/sub/data.bin", "sub/data.bin"),
        ("sub", None),  # a directory is no file
        ("nope.py", None),
        ("deep/er/x.txt", "deep/er/x.txt"),
    ],
)
def test_find_file(path: str, found: str | None) -> None:
    hit = find_file(MEMBERS, path)
    assert (hit.path if hit else None) == found
