"""Gathers among an allocation's processes: AllocationAllGather (the real determined package's
rendezvous on Slurm and Kubernetes) and NotifyContainerRunning (each container says it runs).

The rounds are pure (domain/all_gather.py); here a caller waits, up to the master's rendezvous
timeout, for its round to fill. A round that does not fill in time answers 503, which the
harness retries with the same request id, staying in its round. State is in this process."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Annotated, Any

from litestar import post
from litestar.datastructures import State
from litestar.params import JSONBody, Parameter
from pydantic import Field

from controlplane.api.deps import ApiContext, Caller, Ctx, Db
from controlplane.api.schemas.common import Wire
from controlplane.domain import all_gather
from controlplane.domain.errors import InvalidArgument, Unavailable
from controlplane.services import allocations

AllocationId = Annotated[str, Parameter(max_length=160)]
DEFAULT_TIMEOUT_S = 600.0
MAX_DATA_BYTES = 64 * 1024
MAX_GATHERS = 10_000  # allocations remembered; the oldest are forgotten first


class AllGatherRequest(Wire):
    allocation_id: str | None = Field(default=None, max_length=160)
    request_uuid: str | None = Field(default=None, max_length=64)
    num_peers: int | None = Field(default=None, ge=1, le=all_gather.MAX_PEERS)
    data: dict[str, Any]
    rank: int | None = Field(default=None, ge=0)
    node_name: str | None = Field(default=None, max_length=255)


class AllGatherResponse(Wire):
    data: list[dict[str, Any]]


@dataclass
class GatherBoard:
    states: dict[tuple[str, str], all_gather.Gather] = field(default_factory=dict)
    changed: dict[tuple[str, str], asyncio.Condition] = field(default_factory=dict)

    def condition(self, key: tuple[str, str]) -> asyncio.Condition:
        return self.changed.setdefault(key, asyncio.Condition())


def _board(state: State) -> GatherBoard:
    board = state.get("all_gather")
    if board is None:
        board = state["all_gather"] = GatherBoard()
    return board


def _timeout_s(ctx: ApiContext) -> float:
    return float(ctx.public_config.get("rendezvous_timeout_s") or DEFAULT_TIMEOUT_S)


async def _gather(
    state: State, ctx: ApiContext, kind: str, allocation_id: str, data: AllGatherRequest
) -> AllGatherResponse:
    if data.allocation_id not in (None, "", allocation_id):
        raise InvalidArgument("body allocationId does not match the path")
    if len(data.model_dump_json()) > MAX_DATA_BYTES:
        raise InvalidArgument(f"a gather's data is at most {MAX_DATA_BYTES} bytes")
    board = _board(state)
    key = (allocation_id, kind)
    request_id = data.request_uuid or f"rank-{data.rank}"
    cond = board.condition(key)
    async with cond:
        new_state, joined = all_gather.join(
            board.states.get(key, all_gather.Gather()), request_id, data.num_peers or 1, data.data
        )
        board.states[key] = new_state
        cond.notify_all()
        for stale in list(board.states)[: max(0, len(board.states) - MAX_GATHERS)]:
            if stale != key:
                board.states.pop(stale, None)
                board.changed.pop(stale, None)

        def ready() -> bool:
            found = board.states.get(key, all_gather.Gather())
            return any(r.number == joined.number for r in found.done)

        try:
            await asyncio.wait_for(cond.wait_for(ready), timeout=_timeout_s(ctx))
        except TimeoutError:
            raise Unavailable(
                f"the gather of allocation {allocation_id} is still waiting for "
                f"{joined.num_peers} peers; retry"
            ) from None
        done = next(r for r in board.states[key].done if r.number == joined.number)
    return AllGatherResponse(data=done.data)


@post("/api/v1/allocations/{allocation_id:str}/all_gather", status_code=200)
async def allocation_all_gather(
    data: JSONBody[AllGatherRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    state: State,
    allocation_id: AllocationId,
) -> AllGatherResponse:
    await allocations.allocation_for(db, principal, allocation_id)
    await db.commit()  # the wait below may be long: hand the connection back
    return await _gather(state, ctx, "all_gather", allocation_id, data)


@post("/api/v1/allocations/{allocation_id:str}/notify_container_running", status_code=200)
async def notify_container_running(
    data: JSONBody[AllGatherRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    state: State,
    allocation_id: AllocationId,
) -> AllGatherResponse:
    await allocations.allocation_for(db, principal, allocation_id)
    await db.commit()
    return await _gather(state, ctx, "running", allocation_id, data)


ROUTES = [allocation_all_gather, notify_container_running]
