"""Profiler reports -> Determined's labelled system-metrics series."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controlplane.domain import profiler_series as ps

T0 = datetime(2026, 12, 7, 8, tzinfo=UTC)


def report(group: str, steps: int, avg: dict) -> ps.Report:
    return ps.Report(group, steps, T0 + timedelta(seconds=10 * steps), avg)


REPORTS = [
    report("cpu", 1, {"a1": {"cpu_util_simple": 10}}),
    report("cpu", 2, {"a1": {"cpu_util_simple": 30.5}}),
    report("gpu", 1, {"a1": {"GPU-x": {"gpu_util": 90, "gpu_free_memory": 1e9}}}),
    report("disk", 1, {"a1": {"disk_iops": 4, "/": {"disk_util": 50}, "/data": {"disk_util": 7}}}),
    report("network", 1, {"a1": {"net_throughput_sent": 1, "net_throughput_recv": "NaN"}}),
    report("training", 1, {"loss": 0.1}),  # not a profiler group
    report("memory", 1, {"a1": "junk"}),
]


def test_labels() -> None:
    labels = [s.label for s in ps.series(REPORTS)]
    assert labels == sorted(
        [
            ps.Label("cpu_util_simple", "a1"),
            ps.Label("gpu_util", "a1", "GPU-x"),
            ps.Label("gpu_free_memory", "a1", "GPU-x"),
            ps.Label("disk_iops", "a1"),
            ps.Label("disk_util", "a1"),
            ps.Label("disk_util:/data", "a1"),
            ps.Label("net_throughput_sent", "a1"),
        ]
    )


def test_values_in_report_order() -> None:
    [cpu] = ps.series(REPORTS, ps.Label("cpu_util_simple", ""))
    assert cpu.values == [10.0, 30.5] and cpu.batches == [1, 2]
    assert cpu.timestamps == [T0 + timedelta(seconds=10), T0 + timedelta(seconds=20)]


@pytest.mark.parametrize(
    ("wanted", "names"),
    [
        (ps.Label("", "", "GPU-x"), ["gpu_free_memory", "gpu_util"]),
        (ps.Label("", "other"), []),
        (ps.Label("disk_util", "a1"), ["disk_util"]),
    ],
)
def test_filter(wanted: ps.Label, names: list[str]) -> None:
    assert [s.label.name for s in ps.series(REPORTS, wanted)] == names


def test_wire_labels() -> None:
    assert ps.Label("gpu_util", "a1", "G").wire(5) == {
        "trialId": 5,
        "name": "gpu_util",
        "agentId": "a1",
        "metricType": "PROFILER_METRIC_TYPE_SYSTEM",
        "gpuUuid": "G",
    }
    assert "gpuUuid" not in ps.Label("cpu_util_simple", "a1").wire(5)
