"""A trial's core_context.profiler is the real one: its reports go to the master as metric
reports of Determined's groups (cpu, memory, disk, network), keyed by the agent's id, and the
last samples are reported when the context closes."""

from __future__ import annotations

import time
from typing import Any

import harness as det
from harness.core import ProfilerContext
from tests.harness.fakes import FakeTransport
from tests.harness.test_core import _answers, on_cluster

__all__ = ["on_cluster"]


def _groups(fake: FakeTransport) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for report in fake.reports():
        out.setdefault(report["group"], []).append(report["metrics"])
    return out


def test_trial_profiler_reports_system_metrics(on_cluster: dict[str, str]) -> None:
    fake, _ = _answers()
    with det.core.init(session=fake) as ctx:
        assert isinstance(ctx.profiler, ProfilerContext)
        ctx.profiler.on(sampling_interval=0.1, samples_per_report=2)
        for _ in range(600):  # until the first full report is sent
            if "cpu" in _groups(fake):
                break
            time.sleep(0.05)
    groups = _groups(fake)
    assert {"cpu", "memory", "disk", "network"} <= set(groups)
    first = groups["cpu"][0]
    assert first["trialId"] == 5 and first["stepsCompleted"] == 1
    assert set(first["metrics"]["avgMetrics"]) == {"agent-1"}
    assert 0 <= first["metrics"]["avgMetrics"]["agent-1"]["cpu_util_simple"] <= 100
    assert groups["memory"][0]["metrics"]["avgMetrics"]["agent-1"]["memory_free"] > 0
    steps = [r["stepsCompleted"] for r in groups["cpu"]]
    assert steps == list(range(1, len(steps) + 1))


def test_a_context_off_the_cluster_carries_the_dummy(tmp_path: Any) -> None:
    with det.core.init() as ctx:
        assert not isinstance(ctx.profiler, ProfilerContext)
        ctx.profiler.on()
