"""The capacity-day benchmark: hand-computed days for each strategy, and the recorded day."""

from __future__ import annotations

import pytest

from benchmarks.capacity_day import ATTEMPT_S, BOOT_S, TICK_S, main, run, simulate, strategies
from benchmarks.capacity_trace import RATES, Job, Trace, load_trace, make_trace, market_key

A_SPOT = market_key("g5.12xlarge", "us-east-1a", spot=True)
B_SPOT = market_key("g5.12xlarge", "us-east-1b", spot=True)
G5_12_SPOT = 2.27  # provisioners/data/prices.json, g5.12xlarge spot $/h


def _day(*jobs: Job, stockouts=None, reclaims=None) -> Trace:
    return Trace(tuple(jobs), dict(stockouts or {}), dict(reclaims or {}), dict(RATES))


def _by_name(trace: Trace) -> dict[str, object]:
    return {s.name.split(" ")[0]: simulate(trace, s) for s in strategies()}


def test_a_stockout_in_the_one_zone_makes_determined_wait_it_out_and_the_others_fail_over() -> None:
    trace = _day(Job(0.0, 3600.0), stockouts={A_SPOT: ((0.0, 7200.0),)})
    results = _by_name(trace)
    ours, det, fixed = results["ours"], results["one"], results["fixed-order"]
    # ours: zone a refused at t=0, zone b launched 20 s later, booted 180 s after that
    assert ours.waits_s == [ATTEMPT_S + BOOT_S] and ours.failed_attempts == 1
    assert fixed.waits_s == [ATTEMPT_S + BOOT_S]
    # Determined: refused at every tick until the stockout ends at 7,200 s
    assert det.waits_s == [7200.0 + BOOT_S]
    assert det.failed_attempts == 7200 / TICK_S
    # four g5.12xlarge spot from launch to the end of an hour's work
    assert ours.cost == pytest.approx(4 * G5_12_SPOT * (BOOT_S + 3600) / 3600)
    assert det.cost == pytest.approx(ours.cost)


def test_ours_remembers_a_refused_offer_and_fixed_order_asks_it_again() -> None:
    trace = _day(Job(0.0, 600.0), Job(TICK_S, 600.0), stockouts={A_SPOT: ((0.0, 3600.0),)})
    results = _by_name(trace)
    assert results["ours"].failed_attempts == 1  # the second gang skips the cold zone a
    assert results["fixed-order"].failed_attempts == 2
    assert results["ours"].waits_s == [ATTEMPT_S + BOOT_S, BOOT_S]


def test_a_reclaim_sends_the_gang_back_to_wait_with_the_work_it_has_left() -> None:
    trace = _day(Job(0.0, 3600.0), reclaims={A_SPOT: (1800.0,)})
    det = _by_name(trace)["one"]
    assert det.reclaimed == 1 and len(det.waits_s) == 2
    # relaunched at the first tick after the reclaim (1,800 s), for the 1,620 s of work left
    assert det.waits_s == [BOOT_S, BOOT_S]
    first = 1800.0 / 3600
    second = (BOOT_S + 3600 - (1800 - BOOT_S)) / 3600
    assert det.cost == pytest.approx(4 * G5_12_SPOT * (first + second))


def test_when_every_spot_market_is_out_ours_waits_ten_minutes_then_goes_on_demand() -> None:
    out = {
        market_key(t, z, spot=True): ((0.0, 1e9),)
        for t in ("g5.12xlarge", "g5.48xlarge", "p3.8xlarge")
        for z in ("us-east-1a", "us-east-1b", "us-east-1c")
    }
    results = _by_name(_day(Job(0.0, 600.0), stockouts=out))
    ours, fixed = results["ours"], results["fixed-order"]
    assert ours.on_demand_launches == 1 and fixed.on_demand_launches == 1
    assert 600.0 <= ours.waits_s[0] - BOOT_S < 600.0 + TICK_S + 9 * ATTEMPT_S
    assert results["one"].censored == 1 and results["one"].percentile(0.95) == float("inf")


def test_the_recorded_day_is_the_default_draw_and_meets_the_targets(capsys) -> None:
    recorded = load_trace()
    assert recorded == make_trace()
    assert len(recorded.jobs) >= 20
    result = run(recorded)
    assert result.misses() == []
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "one type, one zone (Determined)" in out and "targets met" in out


def test_other_days_give_one_row_per_seed() -> None:
    from benchmarks.capacity_day import other_days

    title, header, rows, notes = other_days(2)
    assert "2 seeds" in title and [r[0] for r in rows] == ["1", "2"]
    assert all(len(r) == len(header) == 8 for r in rows)
    assert notes[0].startswith("both targets met on ")
