"""The login benchmark, reduced: a real master, 4 guessers, 2 users, one-second phases.

Costly (a master subprocess and a guesser process, ~20 s) because it checks that the
benchmark's phases, address binding and table work end to end."""

from __future__ import annotations

import json
import math

from benchmarks.login_throttle import PHASES, Result, decision_cost_us, percentile, run


async def test_reduced_run_measures_every_phase() -> None:
    throttle = {"free_attempts_per_address": 2, "free_attempts_per_user": 2}
    result = await run(
        guessers=4,
        users=2,
        seconds=1.0,
        settle_s=0.5,
        pause_s=0.05,
        burst_limit_s=60,
        store_keys=200,
        master_env={"DET_SECURITY_LOGIN_THROTTLE": json.dumps(throttle)},
    )
    assert [p.name for p in result.phases] == list(PHASES)
    assert all(p.legit_ms and p.legit_failed == 0 for p in result.phases)
    assert json.loads(json.dumps(result.as_json()))["phases"][3]["name"] == "steady"
    burst, steady = result.phase("burst"), result.phase("steady")
    assert burst.guesses[403] >= 4 * 2  # every address's free attempts were checked
    assert steady.guesses[429] > 0 and steady.refused_ms
    assert result.phase("alone").guesses.total() == 0
    assert result.decide_us > 0 and result.store_keys == 200
    title, header, rows, notes = result.table()
    assert "2 users under 4 guessers" in title and "µs per login attempt" in notes[0]
    assert len(rows) == len(PHASES) and all(len(r) == len(header) for r in rows)
    assert all(math.isfinite(x) for x in result.slowdown())
    assert isinstance(result, Result)


def test_percentile_is_nearest_rank() -> None:
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert percentile([1.0, 2.0], 95) == 2.0
    assert math.isnan(percentile([], 50))


def test_decision_cost_is_microseconds() -> None:
    assert 0 < decision_cost_us(1_000, samples=2_000) < 10_000
