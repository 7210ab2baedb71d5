"""The search-efficiency benchmark's command line: `--ours` picks which of our rows run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.search_efficiency import OURS, OURS_KEYS

REPO = Path(__file__).resolve().parents[2]


def test_every_row_of_ours_has_a_key() -> None:
    assert sorted(OURS_KEYS.values()) == sorted(OURS)


def test_only_the_chosen_rows_run() -> None:
    # An easy target: the first trials reach it, so one seed takes seconds.
    args = ["--seeds", "1", "--target", "0.5", "--ours", "random", "--no-peers", "--no-floor"]
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.search_efficiency", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr
    table = [line for line in run.stdout.splitlines() if line.startswith("| ")]
    assert [line.split("|")[1].strip() for line in table[1:]] == ["random"]
    assert "1/1" in table[1]
