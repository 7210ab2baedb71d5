"""System-metrics series of a trial, from the reports its profiler made (harness.core._profiler:
groups gpu/cpu/memory/disk/network, metrics keyed by agent id), labelled as Determined's
GetTrialProfilerAvailableSeries / GetTrialProfilerMetrics label them. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

GROUPS = ("gpu", "cpu", "memory", "disk", "network")
SYSTEM = "PROFILER_METRIC_TYPE_SYSTEM"
ROOT = "/"


@dataclass(frozen=True, order=True)
class Label:
    name: str
    agent_id: str
    gpu_uuid: str = ""

    def wire(self, trial_id: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trialId": trial_id,
            "name": self.name,
            "agentId": self.agent_id,
            "metricType": SYSTEM,
        }
        if self.gpu_uuid:
            out["gpuUuid"] = self.gpu_uuid
        return out


@dataclass(frozen=True)
class Report:
    group: str
    steps: int
    at: datetime
    avg: dict[str, Any]


@dataclass
class Series:
    label: Label
    batches: list[int] = field(default_factory=list)
    timestamps: list[datetime] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def points(report: Report) -> Iterable[tuple[Label, float]]:
    """Each (label, value) of one report: a GPU's values carry its UUID; a disk path's usage is
    named `disk_util` for `/` and `disk_util:<path>` for another mount."""
    for agent, metrics in report.avg.items():
        if not isinstance(metrics, dict):
            continue
        for key, value in metrics.items():
            if isinstance(value, dict):
                for inner, v in value.items():
                    number = _number(v)
                    if number is None:
                        continue
                    if report.group == "gpu":
                        yield Label(inner, str(agent), str(key)), number
                    else:
                        name = inner if key == ROOT else f"{inner}:{key}"
                        yield Label(name, str(agent)), number
            elif (number := _number(value)) is not None:
                yield Label(key, str(agent)), number


def series(reports: Iterable[Report], wanted: Label | None = None) -> list[Series]:
    """The series the reports hold (all, or those matching `wanted`'s set fields), sorted."""
    found: dict[Label, Series] = {}
    for report in reports:
        if report.group not in GROUPS:
            continue
        for label, value in points(report):
            if wanted is not None and not matches(label, wanted):
                continue
            s = found.setdefault(label, Series(label))
            s.batches.append(report.steps)
            s.timestamps.append(report.at)
            s.values.append(value)
    return [found[k] for k in sorted(found)]


def matches(label: Label, wanted: Label) -> bool:
    return (
        (not wanted.name or label.name == wanted.name)
        and (not wanted.agent_id or label.agent_id == wanted.agent_id)
        and (not wanted.gpu_uuid or label.gpu_uuid == wanted.gpu_uuid)
    )
