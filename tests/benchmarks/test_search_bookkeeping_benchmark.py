"""The search bookkeeping benchmark runs every trial of its search through the master's paths
and prints its table, at a tiny size."""

from __future__ import annotations

import pytest

from benchmarks import search_bookkeeping


async def test_a_tiny_run_finishes_every_trial_and_prints_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = await search_bookkeeping.run(12, 3, postgres=False)
    assert [(r.what, r.trials) for r in rows] == [
        ("pure searcher (no database)", 12),
        ("master, SQLite", 12),
        ("peer: master, SQLite, no searcher", 12),
    ]
    assert all(r.cpu_s > 0 and r.wall_s > 0 for r in rows)
    search_bookkeeping.print_table(rows)
    out = capsys.readouterr().out
    assert "CPU ms/trial" in out and "master, SQLite" in out
