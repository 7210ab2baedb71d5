"""An allocation as Determined's client reads it (GetAllocation), and a pending preemption a
launcher reports for it (AllocationPendingPreemptionSignal: its node is about to go)."""

from __future__ import annotations

from typing import Annotated

from litestar import get, post
from litestar.params import JSONBody, Parameter
from pydantic import Field

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.schemas.common import Wire
from controlplane.api.schemas.reports import Empty
from controlplane.db.models import Allocation
from controlplane.domain.errors import InvalidArgument
from controlplane.services import allocations

AllocationId = Annotated[str, Parameter(max_length=160)]


class AllocationOut(Wire):
    allocation_id: str
    task_id: str
    state: str
    is_ready: bool
    start_time: str | None = None
    end_time: str | None = None
    slots: int
    exit_reason: str | None = None


class GetAllocationResponse(Wire):
    allocation: AllocationOut


class PendingPreemptionRequest(Wire):
    allocation_id: str | None = Field(default=None, max_length=160)


def _iso(value: object) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")  # type: ignore[attr-defined]


def allocation_out(alloc: Allocation) -> AllocationOut:
    return AllocationOut(
        allocation_id=alloc.allocation_id,
        task_id=alloc.task_id,
        state=f"STATE_{alloc.state}",
        is_ready=alloc.ready,
        start_time=_iso(alloc.start_time),
        end_time=_iso(alloc.end_time),
        slots=alloc.slots,
        exit_reason=alloc.exit_reason,
    )


@get("/api/v1/allocations/{allocation_id:str}")
async def get_allocation(
    db: Db, principal: Caller, allocation_id: AllocationId
) -> GetAllocationResponse:
    alloc = await allocations.allocation_for(db, principal, allocation_id)
    return GetAllocationResponse(allocation=allocation_out(alloc))


@post("/api/v1/allocations/{allocation_id:str}/signals/pending_preemption", status_code=200)
async def pending_preemption(
    data: JSONBody[PendingPreemptionRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    allocation_id: AllocationId,
) -> Empty:
    """The allocation's node will be taken: ask it to checkpoint and stop, as a preemption."""
    if data.allocation_id not in (None, "", allocation_id):
        raise InvalidArgument("body allocationId does not match the path")
    await allocations.allocation_for(db, principal, allocation_id)
    await allocations.request_preemption(
        db, allocation_id, reason="its node reported a pending preemption", now=ctx.clock()
    )
    return Empty()


ROUTES = [get_allocation, pending_preemption]
