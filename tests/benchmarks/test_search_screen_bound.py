"""The screening bound (benchmarks/search_screen_bound.py): the arithmetic of a stream's bound,
its properties, and the command line read from a cache."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.search_bounds import first_hit, screen_bound
from benchmarks.search_screen_bound import HOPELESS, STARTUP, hypothetical_stream

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("hits", "slots", "bound"),
    [
        ([], 4, None),
        ([None, None, None], 4, None),
        ([1], 4, 1),  # the first report of the first round
        ([None, None, None, 1], 4, 1),  # still round 1
        ([None, None, None, None, 1], 4, 5),  # round 2: 4 epochs before it, then its report
        ([3], 4, 9),  # rounds 1 to 3
        ([9, None, None, None, 2], 4, 9),  # the fifth, started in round 2, beats the first
        ([2, None, None, None, 2], 4, 5),
        ([None] * 8 + [1], 4, 9),  # round 3
        ([None, 1], 1, 2),  # one slot: the second starts in round 2
        ([5, 5], 2, 9),
    ],
)
def test_the_bound_of_a_stream(hits: list[int | None], slots: int, bound: int | None) -> None:
    assert screen_bound(hits, slots) == bound


hit_lists = st.lists(st.one_of(st.none(), st.integers(1, 27)), max_size=60)


@given(hit_lists, st.one_of(st.none(), st.integers(1, 27)))
def test_one_more_proposal_never_makes_the_bound_worse(
    hits: list[int | None], more: int | None
) -> None:
    before, after = screen_bound(hits), screen_bound([*hits, more])
    if before is not None:
        assert after is not None and after <= before


@given(hit_lists)
def test_the_bound_is_no_more_than_any_single_configuration_needs(hits: list[int | None]) -> None:
    bound = screen_bound(hits)
    for i, hit in enumerate(hits):
        if hit is not None:
            assert bound is not None
            assert bound <= 4 * (i // 4 + hit - 1) + 1


@given(hit_lists)
def test_a_better_configuration_never_makes_the_bound_worse(hits: list[int | None]) -> None:
    # The same stream with one configuration getting there an epoch sooner.
    for i, hit in enumerate(hits):
        if hit is not None and hit > 1:
            better = [*hits[:i], hit - 1, *hits[i + 1 :]]
            assert screen_bound(better) <= screen_bound(hits)  # type: ignore[operator]


def test_first_hit_counts_epochs_from_one() -> None:
    assert first_hit([0.1, 0.93, 0.94], 0.93) == 2
    assert first_hit([0.1, 0.5], 0.93) is None
    assert first_hit([], 0.5) is None


def test_a_hypothetical_stream_has_the_share_it_is_asked_for() -> None:
    pool = [[0.1, 0.2], [0.3], [0.8, 0.9], [0.6]]
    for share in (0.0, 1.0):
        stream = hypothetical_stream(pool, share, random.Random(1), length=200)
        rest = stream[STARTUP:]
        assert all((curve[0] < HOPELESS) == (share == 1.0) for curve in rest)
    mixed = hypothetical_stream(pool, 0.5, random.Random(1), length=2000)[STARTUP:]
    assert 0.45 < sum(curve[0] < HOPELESS for curve in mixed) / len(mixed) < 0.55


def test_the_command_reads_its_curves_from_the_cache(tmp_path: Path) -> None:
    # Curves for two seeds, as if trained to 0.95: nothing is trained again.
    curves = {
        "1": [[0.1] * 27, [0.9, 0.93]] + [[0.2] * 27] * 38,
        "2": [[0.7, 0.8, 0.96]] + [[0.1] * 27] * 39,
    }
    cache = tmp_path / "curves.json"
    cache.write_text(json.dumps({"target": 0.95, "curves": curves}))
    argv = [sys.executable, "-m", "benchmarks.search_screen_bound", "--seeds", "1", "2"]
    argv += ["--target", "0.93", "0.95", "--cache", str(cache)]
    run = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "configurations trained" not in run.stdout
    own = next(line for line in run.stdout.splitlines() if line.startswith("| random search"))
    # Seed 1: the second configuration, round 1, its second epoch: 4 + 1. Seed 2: the first,
    # its third epoch: 9. At 0.95 seed 1 never gets there: 600 in the median.
    assert own.split("|")[2].strip() == "7 (2/2)"
    assert own.split("|")[3].strip() == f"{(600 + 9) / 2:g} (1/2)"
