"""`det trial profiler`: a trial's system-metrics series summarised, one row per series."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

PROFILER_HEADERS = ["Metric", "Agent", "GPU", "Samples", "Mean", "Min", "Max", "Last", "Last At"]


def _num(value: float) -> str:
    return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.3e}"


def profiler_rows(batches: Iterable[dict[str, Any]]) -> list[list[Any]]:
    """Rows from GetTrialProfilerMetrics results ({"batch": {values, timestamps, labels}})."""
    rows = []
    for item in batches:
        batch = item.get("batch") or {}
        values = [float(v) for v in batch.get("values") or []]
        if not values:
            continue
        labels = batch.get("labels") or {}
        stamps = batch.get("timestamps") or [""]
        rows.append(
            [
                labels.get("name", ""),
                labels.get("agentId", ""),
                labels.get("gpuUuid", ""),
                len(values),
                _num(sum(values) / len(values)),
                _num(min(values)),
                _num(max(values)),
                _num(values[-1]),
                stamps[-1],
            ]
        )
    return rows
