"""core_context.profiler: Determined's ProfilerContext behaviour over a fake sampler; the reports
it makes are TrainContext reports of the groups Determined uses, keyed by the agent's id."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from harness.core._profiler import DummyProfilerContext, ProfilerContext


class FakeSampler:
    def __init__(self) -> None:
        self.n = 0

    def sample(self) -> dict[str, dict[str, Any]]:
        self.n += 1
        return {
            "cpu": {"cpu_util_simple": float(self.n)},
            "memory": {"memory_free": 100.0},
            "gpu": {},  # no GPU here: no gpu report
        }


class Recorder:
    def __init__(self, wanted: int) -> None:
        self.reports: list[tuple[str, int, dict[str, Any]]] = []
        self.enough = threading.Event()
        self.wanted = wanted

    def __call__(self, group: str, steps: int, metrics: dict[str, Any]) -> None:
        self.reports.append((group, steps, metrics))
        if len(self.reports) >= self.wanted:
            self.enough.set()


def profiler(rec: Recorder, **kw: Any) -> ProfilerContext:
    return ProfilerContext("agent-7", rec, sampler_factory=FakeSampler, **kw)


def test_reports_averages_per_group_keyed_by_agent() -> None:
    rec = Recorder(wanted=4)
    p = profiler(rec)
    p.on(sampling_interval=0.1, samples_per_report=2)
    p.on()  # idempotent
    assert rec.enough.wait(30)
    p.off()
    p.off()
    cpu = [r for r in rec.reports if r[0] == "cpu"]
    assert cpu[0] == ("cpu", 1, {"agent-7": {"cpu_util_simple": 1.5}})
    assert cpu[1] == ("cpu", 2, {"agent-7": {"cpu_util_simple": 3.5}})
    assert {r[0] for r in rec.reports} == {"cpu", "memory"}
    steps = [r[1] for r in cpu]
    assert steps == sorted(set(steps))  # one report key per report: none is deduplicated


def test_off_reports_what_was_sampled() -> None:
    sampled = threading.Event()

    class Signalling(FakeSampler):
        def sample(self) -> dict[str, dict[str, Any]]:
            sampled.set()
            return super().sample()

    rec = Recorder(wanted=1)
    p = ProfilerContext("agent-7", rec, sampler_factory=Signalling)
    p.on(sampling_interval=0.1, samples_per_report=1000)
    assert sampled.wait(30)
    p.off()  # long before 1000 samples: what was sampled is reported now
    assert [r[0] for r in rec.reports][:1] == ["cpu"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sampling_interval": 0.01}, "Sampling interval must be > 0.1"),
        ({"samples_per_report": 0}, "Samples per report"),
        ({"samples_per_report": 1.5}, "Samples per report"),
    ],
)
def test_argument_checks(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        profiler(Recorder(1)).on(**kwargs)


def test_only_the_chief_of_each_node_samples() -> None:
    rec = Recorder(wanted=1)
    p = profiler(rec, local_rank=1)
    p.on(sampling_interval=0.1, samples_per_report=1)
    p.off()
    assert rec.reports == []


def test_dummy_does_nothing() -> None:
    d = DummyProfilerContext()
    d.on()
    d.off()
