"""Unit tests for cli.context (v1File packing) and cli.ignore (.detignore matching)."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from cli.context import (
    DIR_TYPE,
    FILE_TYPE,
    MAX_CONTEXT_SIZE,
    check_size,
    decoded_size,
    pack_context,
    scan_context,
)
from cli.errors import CliError
from cli.ignore import DEFAULT_IGNORES, IgnoreMatcher, parse_rule


def make_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


class TestPackContext:
    def test_entries_match_the_wire_format(self, tmp_path: Path) -> None:
        root = make_tree(
            tmp_path / "ctx",
            {
                "train.py": "print('hi')\n",
                "sub/d.txt": "data",
                "sub/ignored.txt": "no",
                "__pycache__/x.cpython-311.pyc": "bytecode",
                "model.pyc": "bytecode",
                ".git/HEAD": "ref",
                ".detignore": "sub/ignored.txt\n",
            },
        )
        os.utime(root / "train.py", (1795271296, 1795271296))
        files = pack_context(root)
        assert [f["path"] for f in files] == ["sub", "train.py", "sub/d.txt"]
        sub, train, data = files
        assert sub["type"] == DIR_TYPE == 53 and sub["content"] == ""
        assert stat.S_ISDIR(sub["mode"])
        assert train["type"] == FILE_TYPE == 48
        assert base64.b64decode(train["content"]) == b"print('hi')\n"
        assert train["mtime"] == "1795271296"
        assert train["mode"] == (root / "train.py").stat().st_mode
        assert {train["uid"], train["gid"]} == {0}
        assert base64.b64decode(data["content"]) == b"data"

    def test_detignore_negation_and_dir_patterns(self, tmp_path: Path) -> None:
        root = make_tree(
            tmp_path / "ctx",
            {
                "data/big.bin": "x",
                "logs/a.log": "x",
                "keep.log": "x",
                "drop.log": "x",
                "nested/data/inner.txt": "x",
                ".detignore": "# comment\n/data/\n*.log\n!keep.log\n",
            },
        )
        paths = [f["path"] for f in pack_context(root)]
        assert paths == ["logs", "nested", "keep.log", "nested/data", "nested/data/inner.txt"]

    def test_empty_context_dir(self, tmp_path: Path) -> None:
        (tmp_path / "ctx").mkdir()
        assert pack_context(tmp_path / "ctx") == []

    def test_missing_and_non_directory(self, tmp_path: Path) -> None:
        with pytest.raises(CliError, match="does not exist"):
            scan_context(tmp_path / "nope")
        (tmp_path / "file").write_text("x")
        with pytest.raises(CliError, match="must be a directory"):
            scan_context(tmp_path / "file")


class TestSizeLimit:
    def test_limit_value_matches_the_real_client(self) -> None:
        assert MAX_CONTEXT_SIZE == 99_614_720

    def test_decoded_size_rounds_like_base64(self) -> None:
        assert [decoded_size(n) for n in (0, 1, 2, 3, 4)] == [0, 3, 3, 3, 6]

    def test_refuses_oversized_context_before_reading(self, tmp_path: Path) -> None:
        root = tmp_path / "ctx"
        root.mkdir()
        (root / "small.py").write_text("x")
        with open(root / "huge.bin", "wb") as fh:  # sparse: costs no disk and is never read
            fh.truncate(MAX_CONTEXT_SIZE + 1)
        with pytest.raises(CliError) as err:
            pack_context(root)
        message = str(err.value)
        assert "exceeds the maximum allowed size" in message and "huge.bin" in message

    def test_largest_allowed_context_passes_the_check(self, tmp_path: Path) -> None:
        # Sizes count as base64 would decode them (rounded up to 3 bytes), as in the real client.
        largest = MAX_CONTEXT_SIZE // 3 * 3
        root = tmp_path / "ctx"
        root.mkdir()
        with open(root / "edge.bin", "wb") as fh:
            fh.truncate(largest)
        assert check_size(scan_context(root), root) == largest

    def test_ignored_files_do_not_count(self, tmp_path: Path) -> None:
        root = make_tree(tmp_path / "ctx", {"a.py": "x", ".detignore": "*.bin\n"})
        with open(root / "huge.bin", "wb") as fh:
            fh.truncate(MAX_CONTEXT_SIZE + 10)
        assert [f["path"] for f in pack_context(root)] == ["a.py"]


class TestIgnoreMatcher:
    @pytest.mark.parametrize(
        ("pattern", "path", "is_dir", "expected"),
        [
            ("*.log", "a.log", False, True),
            ("*.log", "deep/dir/a.log", False, True),
            ("*.log", "a.logx", False, False),
            ("/top.txt", "top.txt", False, True),
            ("/top.txt", "sub/top.txt", False, False),
            ("build/", "build", True, True),
            ("build/", "build", False, False),
            ("build/", "src/build", True, True),
            ("build/", "build/out.o", False, True),
            ("docs/*.md", "docs/a.md", False, True),
            ("docs/*.md", "docs/x/a.md", False, False),
            ("docs/*.md", "x/docs/a.md", False, False),
            ("**/cache", "a/b/cache", True, True),
            ("**/cache", "cache", False, True),
            ("a/**/z", "a/z", False, True),
            ("a/**/z", "a/b/c/z", False, True),
            ("a/**", "a/b/c", False, True),
            ("a/**", "a", True, False),
            ("file?.txt", "file1.txt", False, True),
            ("file?.txt", "file10.txt", False, False),
            ("[ab].txt", "a.txt", False, True),
            ("[!ab].txt", "a.txt", False, False),
            ("[!ab].txt", "c.txt", False, True),
            ("*.py[co]", "m.pyc", False, True),
            ("terraform*", "terraform.tfstate", False, True),
        ],
    )
    def test_patterns(self, pattern: str, path: str, is_dir: bool, expected: bool) -> None:
        assert IgnoreMatcher([pattern]).is_ignored(path, is_dir) is expected

    def test_last_match_wins_with_negation(self) -> None:
        matcher = IgnoreMatcher(["*.txt", "!keep.txt"])
        assert matcher.is_ignored("drop.txt") and not matcher.is_ignored("keep.txt")

    def test_comments_blanks_and_escapes(self) -> None:
        assert parse_rule("# a comment") is None
        assert parse_rule("   ") is None
        assert IgnoreMatcher(["\\#hash"]).is_ignored("#hash")
        assert IgnoreMatcher(["\\!bang"]).is_ignored("!bang")

    def test_defaults_cover_the_usual_junk(self) -> None:
        matcher = IgnoreMatcher(DEFAULT_IGNORES)
        for path, is_dir in [
            ("__pycache__", True),
            ("pkg/__pycache__", True),
            (".git", True),
            ("x.pyo", False),
            ("shared_fs", True),
        ]:
            assert matcher.is_ignored(path, is_dir), path
        assert not matcher.is_ignored("sub/shared_fs", True)
        assert not matcher.is_ignored("train.py")
