"""The provisioning benchmark: its pool mixes every kind of instance; run and table work small."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.provisioning import CALLS, SCENARIOS, build_snapshot, main, run
from provisioners.base import InstanceState


def test_snapshot_mixes_every_state_and_has_the_agents_asked_for() -> None:
    snapshot = build_snapshot(1_000, 1_000)
    assert len(snapshot.instances) == 1_000
    assert len(snapshot.agents) == 1_000
    assert set(Counter(i.state for i in snapshot.instances)) == set(InstanceState) - {
        InstanceState.UNKNOWN
    }
    memory = snapshot.state.decider
    assert memory.idle_since and memory.disconnected_since
    assert build_snapshot(1_000, 1_000) == snapshot  # seeded: the same every run


def test_run_times_both_calls_on_both_pools() -> None:
    result = run(instances=60, agents=80, runs=3, say=lambda _: None)
    assert [(t.call, t.scenario) for t in result.timings] == [
        (call, name) for name, _ in SCENARIOS for call in CALLS
    ]
    assert all(len(t.samples_ms) == 3 and t.p95_ms >= t.median_ms > 0 for t in result.timings)
    assert any(t.terminate for t in result.timings)
    title, header, rows, notes = result.table()
    assert "60 instances" in title and "80 connected agents" in title
    assert len(rows) == 4 and all(len(row) == len(header) for row in rows)
    assert notes[0].startswith("within max")


def test_main_prints_the_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "provisioning.json"
    missed = main(["--runs", "2", "--instances", "40", "--agents", "40", "--json", str(out)])
    printed = capsys.readouterr().out
    assert "One provisioner decision" in printed
    assert ("Targets: all met." in printed) is (missed == 0)
    data = json.loads(out.read_text())
    assert len(data["timings"]) == 4 and data["instances"] == 40
