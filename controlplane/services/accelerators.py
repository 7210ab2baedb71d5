"""What each container of an allocation reported about its accelerators.

Determined's ``prep_container --resources`` posts the GPUs it sees in the container (or
``acceleratorType: "cpu"``) so that hardware failures can be traced from the task alone, and the
web UI lists them per task (``GET /api/v1/tasks/{id}/acceleratorData``). The reports are
informational: nothing in scheduling reads them, so they are kept in memory, per master process,
for the most recent allocations; a master restart forgets them (the same facts stay in the task's
logs, where prep_container also writes them).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

KEPT_ALLOCATIONS = 4096
KEPT_CONTAINERS = 256  # per allocation: more containers than that is not a real trial


@dataclass(frozen=True)
class AcceleratorReport:
    allocation_id: str
    task_id: str
    resource_pool: str
    container_id: str
    node_name: str
    accelerator_type: str
    accelerator_uuids: tuple[str, ...]


class AcceleratorBoard:
    """Reports by allocation, oldest allocations forgotten first; one report per container (a
    retried or repeated post replaces the earlier one)."""

    def __init__(self, kept: int = KEPT_ALLOCATIONS) -> None:
        self._kept = kept
        self._by_allocation: OrderedDict[str, dict[str, AcceleratorReport]] = OrderedDict()

    def record(self, report: AcceleratorReport) -> None:
        reports = self._by_allocation.pop(report.allocation_id, {})
        if report.container_id in reports or len(reports) < KEPT_CONTAINERS:
            reports[report.container_id] = report
        self._by_allocation[report.allocation_id] = reports
        while len(self._by_allocation) > self._kept:
            self._by_allocation.popitem(last=False)

    def for_allocations(self, allocation_ids: list[str]) -> list[AcceleratorReport]:
        """The reports of these allocations, in the order given, then by container."""
        out: list[AcceleratorReport] = []
        for allocation_id in allocation_ids:
            reports = self._by_allocation.get(allocation_id, {})
            out.extend(reports[c] for c in sorted(reports))
        return out
