"""The usage CSV exports, in Determined 0.38.1's columns with ours appended after them
(`det resources allocations|raw|aggregated`, the cluster page's download). Pure formatting."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from controlplane.api.schemas.usage import ResourceAllocationRawEntry
from controlplane.domain.cost import AllocationUse, Share
from controlplane.domain.usage_periods import PeriodTotals

ALLOCATION_COLUMNS = (
    "allocation_id",
    "task_type",
    "username",
    "workspace_name",
    "experiment_id",
    "slots",
    "start_time",
    "end_time",
    "imagepulling_time",
    # ours
    "trial_id",
    "resource_pool",
    "slot_hours",
    "unpriced_slot_hours",
    "cost_usd",
)
RAW_COLUMNS = (
    "experiment_id",
    "kind",
    "username",
    "labels",
    "slots",
    "start_time",
    "end_time",
    "seconds",
    "cost_usd",
)
AGGREGATED_COLUMNS = ("aggregation_type", "aggregation_key", "date", "seconds", "cost_usd")


def rfc3339(when: datetime | None) -> str:
    if when is None:
        return ""
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _seconds(value: float) -> str:
    return f"{value:f}"


def _money(value: float) -> str:
    return f"{value:.6f}"


def _write(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def allocations_csv(pairs: Iterable[tuple[AllocationUse, Share]]) -> str:
    """One row per allocation; slot-hours and cost are its share within the asked window."""
    rows = []
    for use, share in pairs:
        rows.append(
            (
                use.allocation_id,
                use.task_type,
                use.username,
                use.workspace,
                use.experiment_id or 0,
                use.slots,
                rfc3339(use.start),
                rfc3339(use.end),
                "0.0",
                use.trial_id if use.trial_id is not None else "",
                use.pool,
                f"{share.slot_hours:.6f}",
                f"{share.unpriced_slot_seconds / 3600:.6f}",
                _money(share.cost),
            )
        )
    return _write(ALLOCATION_COLUMNS, rows)


def _labels(labels: Iterable[str]) -> str:
    # Determined escapes backslashes and commas inside a label, then joins with commas.
    return ",".join(label.replace("\\", "\\\\").replace(",", "\\,") for label in labels)


def raw_csv(entries: Iterable[ResourceAllocationRawEntry]) -> str:
    """Rows of the raw entries the JSON endpoint serves."""
    rows = [
        (
            e.experiment_id or 0,
            e.kind,
            e.username or "",
            _labels(e.labels or []),
            e.slots,
            e.start_time or "",
            e.end_time or "",
            _seconds(e.seconds),
            _money(e.cost),
        )
        for e in entries
    ]
    return _write(RAW_COLUMNS, rows)


def aggregated_csv(periods: Iterable[PeriodTotals]) -> str:
    """Determined's long format: one row per period and key, `total` last in each period."""
    rows: list[Sequence[object]] = []
    for p in periods:
        for kind, groups in (
            ("experiment_label", p.by_experiment_label),
            ("username", p.by_username),
            ("resource_pool", p.by_resource_pool),
            ("workspace", p.by_workspace),
        ):
            for key, share in groups.items():
                rows.append(
                    (kind, key, p.period.label, _seconds(share.slot_seconds), _money(share.cost))
                )
        rows.append(
            (
                "total",
                "total",
                p.period.label,
                _seconds(p.total.slot_seconds),
                _money(p.total.cost),
            )
        )
    return _write(AGGREGATED_COLUMNS, rows)
