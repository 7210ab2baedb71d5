"""The pure helpers behind the size limits: JSON sizes and cut log lines."""

from __future__ import annotations

import pytest

from controlplane.domain import limits
from controlplane.domain.errors import InvalidArgument

LIMIT = limits.LOG_LINE_CHARS


@pytest.mark.parametrize("length", [0, 1, LIMIT - 1, LIMIT])
def test_lines_within_the_limit_are_kept_whole(length: int) -> None:
    assert limits.truncate_log_line("a" * length) == "a" * length


@pytest.mark.parametrize("length", [LIMIT + 1, LIMIT + 9, LIMIT * 2, 10 * LIMIT + 7, 10**7])
def test_longer_lines_are_cut_to_the_limit_with_a_marker_of_what_was_cut(length: int) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(length))
    cut = limits.truncate_log_line(text)
    kept = cut.index(" [... ")
    assert LIMIT - 100 < len(cut) <= LIMIT
    assert cut == text[:kept] + limits.log_truncation_marker(length - kept)
    assert f"[... {length - kept} characters cut" in cut


def test_a_lines_newline_is_not_counted_and_is_kept() -> None:
    """The harness ships long output in pieces of exactly the limit; the last piece of a line
    ends in its newline and must be stored whole (one such piece was lost before)."""
    piece = "A" * LIMIT + "\n"
    assert limits.truncate_log_line(piece) == piece
    cut = limits.truncate_log_line("A" * (LIMIT + 5) + "\n")
    assert cut.endswith(" characters cut: log lines are kept to 65536]\n")
    assert len(cut) <= LIMIT + 1


def test_json_size_counts_utf8_bytes_of_compact_json() -> None:
    assert limits.json_size({"a": [1, 2]}) == len('{"a":[1,2]}')
    assert limits.json_size({"é": "日本"}) == len('{"é":"日本"}'.encode())


def test_check_json_size_names_the_field_and_the_limit() -> None:
    limits.check_json_size("the config", {"a": "x" * 10}, 20)
    with pytest.raises(InvalidArgument, match="the config is 21 bytes as JSON; at most 20"):
        limits.check_json_size("the config", {"a": "x" * 13}, 20)
