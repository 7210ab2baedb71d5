"""Reading Determined's prefixes off a direct task's output (controlplane/domain/task_output)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.task_output import MAX_RANK, OutputLine, read_line


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("hello", OutputLine("hello")),
        ("[rank=1] hello", OutputLine("hello", 1)),
        ("ERROR: boom", OutputLine("boom", None, "ERROR")),
        ("[rank=12] WARNING: careful", OutputLine("careful", 12, "WARNING")),
        (" [rank=0] DEBUG: x", OutputLine("x", 0, "DEBUG")),
        ("WARNING: [rank=1] x", OutputLine("[rank=1] x", None, "WARNING")),  # rank comes first
        ("[rank=-1] x", OutputLine("[rank=-1] x")),
        ("error: lower case", OutputLine("error: lower case")),
        ("NOTICE: unknown level", OutputLine("NOTICE: unknown level")),
        ("the ERROR: is inside", OutputLine("the ERROR: is inside")),
        (f"[rank={MAX_RANK + 1}] too big", OutputLine(f"[rank={MAX_RANK + 1}] too big")),
        ("", OutputLine("")),
    ],
)
def test_prefixes(text: str, read: OutputLine):
    assert read_line(text) == read


@pytest.mark.parametrize(
    ("level", "stored"), [(None, "LOG_LEVEL_INFO"), ("ERROR", "LOG_LEVEL_ERROR")]
)
def test_stored_level(level: str | None, stored: str):
    assert OutputLine("x", None, level).stored_level == stored


@given(st.text())
def test_a_line_without_prefixes_is_kept_as_it_is(text: str):
    read = read_line(text)
    if read.rank_id is None and read.level is None:
        assert read.text == text
    else:
        assert text.endswith(read.text)
