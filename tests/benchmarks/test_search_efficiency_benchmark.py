"""The search-efficiency benchmark: its command line (`--ours`, several targets, `--save`) and
the interval printed with each ratio."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from benchmarks.search_efficiency import OURS, OURS_KEYS

REPO = Path(__file__).resolve().parents[2]


def _bench(*args: str, bounds: tuple[str, ...] = ()) -> str:
    """The benchmark's printout for one easy seed of our random row (seconds, no peers)."""
    argv = [sys.executable, "-m", "benchmarks.search_efficiency", "--seeds", "1", *args]
    argv += ["--ours", "random", "--no-peers", "--no-floor", "--bounds", *bounds]
    run = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_every_row_of_ours_has_a_key() -> None:
    assert sorted(OURS_KEYS.values()) == sorted(OURS)


def test_only_the_chosen_rows_run(tmp_path: Path) -> None:
    # An easy target: the first trials reach it.
    out = _bench("--target", "0.5", "--save", str(tmp_path / "runs.json"))
    table = [line for line in out.splitlines() if line.startswith("| ")]
    assert [line.split("|")[1].strip() for line in table[1:]] == ["random"]
    assert "1/1" in table[1]
    saved = json.loads((tmp_path / "runs.json").read_text())
    assert saved["seeds"] == [1] and list(saved["searches"]) == ["random"]
    assert max(saved["searches"]["random"][0]["accuracies"]) >= 0.5


def test_a_lower_target_is_read_from_the_same_run() -> None:
    from benchmarks.search_efficiency import _rounds, hit

    run = {"accuracies": [0.2, 0.91, 0.5, 0.93, 0.94], "round_ends": [2, 4, 5]}
    assert [hit(run, t) for t in (0.9, 0.92, 0.93, 0.95)] == [2, 4, 4, None]
    assert [_rounds(run, t) for t in (0.9, 0.93, 0.94, 0.95)] == ["1", "2", "3", ">3"]
    floor = {"accuracies": [0.5, 0.95], "rounds": 2}
    assert (_rounds(floor, 0.9), _rounds(floor, 0.99)) == ("2", ">2")


def test_every_target_gets_its_table() -> None:
    out = _bench("--target", "0.6", "0.5")
    titles = [line for line in out.splitlines() if line.startswith("Epochs to reach")]
    assert [title.split()[5] for title in titles] == ["0.5", "0.6"]
    rows = [line for line in out.splitlines() if line.startswith("| random")]
    easy, hard = (int(row.split("|")[3]) for row in rows)
    assert 1 <= easy <= hard


def test_the_ratio_interval_holds_the_ratio_and_narrows_with_seeds() -> None:
    import random
    import statistics

    from benchmarks.search_efficiency import ratio_interval

    draw = random.Random(7)
    ours = [draw.randint(60, 160) for _ in range(30)]
    ray = [draw.randint(100, 400) for _ in range(30)]
    optuna = [600] * 30  # a peer that never gets there is never the best one
    ratio = statistics.median(ours) / statistics.median(ray)
    low, high = ratio_interval(ours, [ray, optuna], random.Random(0))
    assert low < ratio < high < 1
    assert ratio_interval(ours, [ray, optuna], random.Random(0)) == (low, high)  # seeded
    wide = ratio_interval(ours[:6], [ray[:6], optuna[:6]], random.Random(0))
    assert wide[1] - wide[0] > high - low
    # Identical rows: every draw gives exactly 1.
    assert ratio_interval(ray, [ray], random.Random(1)) == (1.0, 1.0)


def test_the_wide_floor_trains_every_slot_and_restarts_a_finished_one(monkeypatch) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from benchmarks import search_efficiency as bench

    with ThreadPoolExecutor(bench.WORKERS) as pool:
        easy = bench.run_oracle_wide(1, 0.5, pool)  # type: ignore[arg-type]
        # The first round trains all four slots; the hit is one of them.
        assert easy["rounds"] == 1 and len(easy["accuracies"]) == bench.WORKERS
        assert bench.hit(easy, 0.5) is not None
        monkeypatch.setattr(bench, "MAX_EPOCHS", 2)
        monkeypatch.setattr(bench, "BUDGET", 6 * bench.WORKERS)
        never = bench.run_oracle_wide(1, 1.01, pool)  # type: ignore[arg-type]
    # Six rounds within the budget; each slot starts a new trial after its second epoch: the
    # third round is the first epoch of the next four trial seeds the run draws.
    assert never["rounds"] == 6 and bench.hit(never, 1.01) is None
    accuracies = never["accuracies"]
    assert accuracies[: bench.WORKERS] == easy["accuracies"]
    draws = random.Random(1)
    seeds = [draws.randrange(2**31) for _ in range(2 * bench.WORKERS)][bench.WORKERS :]
    third = [bench.train_epoch(bench.ORACLE, bench.init(bench.ORACLE, s))[1] for s in seeds]
    assert accuracies[2 * bench.WORKERS : 3 * bench.WORKERS] == third


def test_a_runs_own_proposals_bound_what_it_spent() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from benchmarks import search_efficiency as bench

    with ThreadPoolExecutor(bench.WORKERS) as pool:
        run = bench.run_ours(bench.OURS["random"], 3, 0.9, pool)  # type: ignore[arg-type]
        trained = bench.run_bound(run["proposed"], 0.9, pool)  # type: ignore[arg-type]
    # The proposals are the run's creations, in order: its first four start the first round.
    assert len(run["proposed"]) == len(trained["curves"]) >= bench.WORKERS
    assert run["proposed"][:4] == bench.random_configs(3)[:4]
    spent = bench.hit(run, 0.9)
    bound = bench.hit(bench.bound_at(trained, 0.9), 0.9)
    # Random search keeps all four slots busy, so what it spent is one allocation of its own
    # proposals: never below their bound.
    assert spent is not None and bound is not None and bound <= spent
    assert bench.hit(bench.bound_at(trained, 1.01), 1.01) is None  # nothing gets to 1.01


def test_the_bound_row_is_printed_beside_the_run() -> None:
    out = _bench("--target", "0.8", bounds=("random",))
    rows = {
        line.split("|")[1].strip(): line.split("|")
        for line in out.splitlines()
        if line.startswith("| ") and "searcher" not in line
    }
    label = "bound: random, its own proposals with foresight"
    assert list(rows) == ["random", label]
    assert 1 <= int(rows[label][3]) <= int(rows["random"][3])
