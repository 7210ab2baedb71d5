"""Workspace slot quotas as a pass plans: who holds how many slots, and who may take more.

Every scheduler asks the ledger before it fits a slotted request and charges it for what it
places, so a plan never puts a workspace over its quota in this pool. A request the quota holds
back waits with WORKSPACE_QUOTA and is otherwise left out of the pass: it blocks no one behind
it and is no reason to preempt anyone (it could not start even with room made for it).

Running allocations count in full, also those a pass preempts (they hold their slots until
they exit), so a quota lowered below what a workspace holds only stops new starts. Zero-slot
(aux) work holds no slots and is never held back. With no quotas in the snapshot, every call
returns at once and plans are exactly those without the ledger.
"""

from __future__ import annotations

from resource_pools.types import PoolSnapshot, Request, Waiting, WaitReason


def quota_detail(used: int, limit: int, slots: int) -> str:
    """What the queue shows for a request its workspace's quota holds back."""
    head = f"waiting: workspace quota {used} of {limit} slots in use"
    if slots > limit:
        return f"{head}; {slots} slots requested, more than the quota"
    if used < limit:
        return f"{head}; {slots} slots requested"
    return head


class QuotaLedger:
    """Slots held per workspace with a quota: running allocations, then what the pass places."""

    def __init__(self, snapshot: PoolSnapshot) -> None:
        self._quotas = snapshot.quotas
        self._groups = snapshot.groups
        self._used: dict[str, int] = {}
        self._details: dict[tuple[int, int, int], str] = {}
        if not self._quotas:
            return
        for allocation in snapshot.running:
            workspace = self._workspace(allocation.job_id)
            if workspace is not None:
                self._used[workspace] = self._used.get(workspace, 0) + allocation.slots

    def _workspace(self, job_id: str) -> str | None:
        """The job's workspace when that workspace has a quota here, else None."""
        group = self._groups.get(job_id)
        if group is None or group.workspace not in self._quotas:
            return None
        return group.workspace

    def used(self, workspace: str) -> int:
        return self._used.get(workspace, 0)

    def refuses(self, request: Request) -> Waiting | None:
        """Why the request must wait for its workspace's quota; None when it may be placed."""
        if not self._quotas or request.slots == 0:
            return None
        workspace = self._workspace(request.job_id)
        if workspace is None:
            return None
        used, limit = self._used.get(workspace, 0), self._quotas[workspace]
        if used + request.slots <= limit:
            return None
        key = (used, limit, request.slots)
        detail = self._details.get(key)
        if detail is None:
            detail = self._details[key] = quota_detail(used, limit, request.slots)
        return Waiting(request.allocation_id, WaitReason.WORKSPACE_QUOTA, detail)

    def charge(self, request: Request) -> None:
        """Count a request the pass places (or reserves room for) against its workspace."""
        if not self._quotas or request.slots == 0:
            return
        workspace = self._workspace(request.job_id)
        if workspace is not None:
            self._used[workspace] = self._used.get(workspace, 0) + request.slots
