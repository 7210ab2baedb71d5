"""Round-robin scheduler: Resolute's own (Determined parses ``round_robin`` and refuses it).

Jobs take turns in queue order (the job queue's position, which starts at the submission time, so
`det job update --ahead-of` moves a job's turn), each turn trying one request, oldest first within
the job. A request that does not fit is left waiting with the reason and skipped for the rest of
the pass, so it never blocks the requests behind it; so is one its workspace's slot quota holds
back (resource_pools/quota.py). Nothing is ever preempted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from resource_pools.agent_pool import AgentPool
from resource_pools.quota import QuotaLedger
from resource_pools.types import (
    FittingPolicy,
    PoolSnapshot,
    Request,
    SchedulingPlan,
    StartAllocation,
    Waiting,
)


def job_turns(
    pending: Sequence[Request], position: Callable[[Request], float] | None = None
) -> list[deque[Request]]:
    """Per-job queues in turn order: job by queue position (when given), first submission, then
    id; requests oldest first."""
    by_job: dict[str, list[Request]] = {}
    for request in pending:
        by_job.setdefault(request.job_id, []).append(request)
    first_seen = {
        job: min(r.job_submitted_at for r in requests) for job, requests in by_job.items()
    }

    def place(job: str) -> float:
        return min(map(position, by_job[job])) if position is not None else 0.0

    order = sorted(by_job, key=lambda job: (place(job), first_seen[job], job))
    return [
        deque(sorted(by_job[job], key=lambda r: (r.requested_at, r.allocation_id))) for job in order
    ]


class RoundRobinScheduler:
    """Starts pending requests one job at a time, in turns; never preempts."""

    def __init__(
        self,
        fitting_policy: FittingPolicy = FittingPolicy.BEST,
        allow_heterogeneous: bool = False,
    ) -> None:
        self.fitting_policy = fitting_policy
        self.allow_heterogeneous = allow_heterogeneous

    def schedule(self, snapshot: PoolSnapshot) -> SchedulingPlan:
        """One pass: start what fits, turn by turn; every other request waits with a reason."""
        agents = AgentPool(
            snapshot.agents, self.fitting_policy, allow_heterogeneous=self.allow_heterogeneous
        )
        start: list[StartAllocation] = []
        waiting: list[Waiting] = []
        quota = QuotaLedger(snapshot)
        turns = job_turns(snapshot.pending, snapshot.queue_position)
        while turns:
            for queue in turns:
                request = queue.popleft()
                held = quota.refuses(request)
                if held is not None:
                    waiting.append(held)
                    continue
                fit = agents.find_fit(request)
                if fit is None:
                    waiting.append(agents.explain_no_fit(request))
                    continue
                agents.reserve(fit, request)
                quota.charge(request)
                start.append(StartAllocation(request.allocation_id, fit))
            turns = [queue for queue in turns if queue]
        return SchedulingPlan(start=tuple(start), waiting=tuple(waiting))
