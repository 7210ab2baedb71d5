"""The spot-notice benchmark: its verdicts and table from samples, and one tiny real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.spot_notice import NoticeSample, SpotNoticeResult, main, p95


def sample(safe_s: float, *, lost_s: float = 0.0, since_s: float = 2.0) -> NoticeSample:
    return NoticeSample("i-1", safe_s - 0.5, safe_s, 10, 10, since_s, lost_s)


def result(*samples: NoticeSample, reactions: tuple[float, ...] = (0.1,)) -> SpotNoticeResult:
    r = SpotNoticeResult(len(samples), 1024, 0.5, 10, 5.0, 5.0, samples=list(samples))
    r.first_reaction_s, r.replacement_reactions_s = 0.2, list(reactions)
    return r


def test_p95_is_nearest_rank() -> None:
    assert p95([3.0, 1.0, 2.0]) == 3.0
    assert p95([float(n) for n in range(1, 101)]) == 95.0


def test_safe_within_target_no_loss_and_a_fast_reaction_meet_every_target() -> None:
    r = result(sample(3.0), sample(6.0))
    assert r.misses() == []
    title, header, rows, notes = r.table()
    assert "2 notices" in title and "1,024 MiB" in title
    assert all(len(row) == len(header) for row in rows)
    safe = next(row for row in rows if row[0] == "notice → safe (both)")
    assert safe[2] == "6.00" and safe[-1].endswith("met")
    assert any("one more when preempted" in n for n in notes)


def test_each_target_is_missed_on_its_own() -> None:
    assert "p95 30.0 s" in result(sample(30.0)).misses()[0]
    (lost,) = result(sample(3.0, lost_s=4.0, since_s=1.0)).misses()
    assert "lost 4.0 s of progress" in lost
    (slow,) = result(sample(3.0), reactions=(7.5,)).misses()
    assert "reaction: max 7.50 s" in slow


def test_json_keeps_every_sample_and_the_verdicts() -> None:
    data = result(sample(30.0)).as_json()
    assert data["samples"][0]["safe_s"] == 30.0
    assert data["target_misses"] and data["target_safe_p95_s"] == 25.0


@pytest.mark.slow
def test_one_tiny_notice_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real master, moto, one instance's agent, a 4 MiB checkpoint: about 15 s."""
    out = tmp_path / "spot.json"
    main(
        ["--notices", "1", "--size-mib", "4", "--step-seconds", "0.2", "--ckpt-every", "5",
         "--tick-seconds", "0.5", "--poll-seconds", "0.2", "--json", str(out)]
    )  # fmt: skip
    assert "Spot notice → safe — 1 notices, 4 MiB" in capsys.readouterr().out
    data = json.loads(out.read_text())
    (one,) = data["samples"]
    assert one["lost_s"] == 0.0, one  # the preempted run checkpointed its last step
    assert 0 <= one["to_checkpoint_s"] <= one["safe_s"] < 25, one
    assert len(data["replacement_reactions_s"]) == 1 and data["first_reaction_s"] >= 0
