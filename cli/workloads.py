"""Pure helpers over trial workloads (`v1WorkloadContainer`) and validation metrics."""

from __future__ import annotations

import math
from typing import Any

from cli.render import cell, format_time, strip_state

KINDS = ("training", "validation", "checkpoint")


def split_workload(container: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`{"validation": {...}}` → ("validation", {...}); unknown shapes → ("unknown", {})."""
    for kind in KINDS:
        body = container.get(kind)
        if isinstance(body, dict):
            return kind, body
    return "unknown", {}


def avg_metrics(body: dict[str, Any]) -> dict[str, Any]:
    metrics = body.get("metrics") or {}
    avg = metrics.get("avgMetrics") if isinstance(metrics, dict) else None
    return avg if isinstance(avg, dict) else {}


def _as_float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def best_validation(
    workloads: list[dict[str, Any]], metric: str | None, smaller_is_better: bool = True
) -> float | None:
    """Best value of the searcher metric over the validation workloads."""
    if not metric:
        return None
    values = []
    for container in workloads:
        kind, body = split_workload(container)
        if kind == "validation":
            value = _as_float(avg_metrics(body).get(metric))
            if value is not None:
                values.append(value)
    if not values:
        return None
    return min(values) if smaller_is_better else max(values)


def searcher_metric(config: dict[str, Any] | None) -> tuple[str | None, bool]:
    searcher = (config or {}).get("searcher") or {}
    smaller = searcher.get("smaller_is_better", True)
    return searcher.get("metric"), bool(True if smaller is None else smaller)


def workload_rows(workloads: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Rows for a workloads table: batches, type, state, end time, checkpoint, metrics."""
    rows = []
    for container in workloads:
        kind, body = split_workload(container)
        rows.append(
            (
                body.get("totalBatches"),
                kind.upper(),
                strip_state(body.get("state")),
                format_time(body.get("endTime")),
                body.get("uuid") if kind == "checkpoint" else "",
                cell(avg_metrics(body)),
            )
        )
    return rows


WORKLOAD_HEADERS = ["Batches", "Type", "State", "End Time", "Checkpoint", "Metrics"]


def latest_checkpoint(workloads: list[dict[str, Any]]) -> str | None:
    uuid = None
    for container in workloads:
        kind, body = split_workload(container)
        if kind == "checkpoint" and body.get("uuid"):
            uuid = body["uuid"]
    return uuid
