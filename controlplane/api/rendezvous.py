"""The rendezvous of a multi-container allocation (Determined's get_AllocationRendezvousInfo).

`GET /api/v1/allocations/{allocation_id}/resources/{resources_id}/rendezvous` answers
``{"rendezvousInfo": {"addresses": [...], "rank": n, "slots": [...]}}`` once every container of
the allocation has called it (services.rendezvous). Each waiting call re-reads the allocation
every RENDEZVOUS_STEP_S, so one whose allocation ends meanwhile, or whose client hangs up, stops.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Annotated

from litestar import Request, get
from litestar.datastructures import State
from litestar.params import Parameter

from controlplane.api.deps import ApiContext, Caller, Ctx, Db
from controlplane.api.schemas.rendezvous import AllocationRendezvousInfoResponse, RendezvousInfo
from controlplane.db.models import Allocation
from controlplane.db.session import transaction
from controlplane.domain.errors import Conflict
from controlplane.services import allocations
from controlplane.services import rendezvous as rdv
from controlplane.services.reschedule import take_reschedule

AllocationId = Annotated[str, Parameter(max_length=160)]
ResourcesId = Annotated[str, Parameter(max_length=200)]
RENDEZVOUS_STEP_S = 0.5
DEFAULT_TIMEOUT_S = 600.0


def _board(state: State) -> rdv.RendezvousBoard:
    board = state.get("rendezvous")
    if board is None:
        board = state["rendezvous"] = rdv.RendezvousBoard()
    return board


def _timeout_s(ctx: ApiContext) -> float:
    # The master's settings reach handlers as public_config (MasterSettings.rendezvous_timeout_s).
    return float(ctx.public_config.get("rendezvous_timeout_s") or DEFAULT_TIMEOUT_S)


async def _address_of(ctx: ApiContext, agent_id: str) -> str:
    """The agent's address as the master sees it: the local address of the agent's websocket to
    the master, which the agent reports (the peer host the master sees, without NAT); for an
    agent that reports none, its hostname resolved by the master."""
    handle = ctx.scheduling.registry.get(agent_id)
    if handle is None:
        raise Conflict(f"agent {agent_id} is not connected; its container cannot be reached")
    peer = getattr(handle, "peer_host", "") or next(iter(handle.addresses), "")
    if peer:
        return str(peer)
    name = handle.hostname or agent_id
    loop = asyncio.get_running_loop()
    for family in (socket.AF_INET, socket.AF_UNSPEC):  # IPv4 first: "localhost" -> 127.0.0.1
        try:
            infos = await loop.getaddrinfo(name, None, family=family, type=socket.SOCK_STREAM)
        except OSError:
            continue
        if infos:
            return str(infos[0][4][0])
    return name


async def _client_gone(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


@get("/api/v1/allocations/{allocation_id:str}/resources/{resources_id:str}/rendezvous")
async def allocation_rendezvous(
    request: Request,
    db: Db,
    principal: Caller,
    ctx: Ctx,
    allocation_id: AllocationId,
    resources_id: ResourcesId,
) -> AllocationRendezvousInfoResponse:
    alloc = await allocations.allocation_for(db, principal, allocation_id)
    if alloc.end_time is not None:
        raise rdv.ended(alloc)
    group = rdv.member_of(alloc, resources_id)
    await db.commit()  # hand the connection back: the wait below may last minutes
    board = _board(request.app.state)
    expected = frozenset(m.resources_id for m in group)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _timeout_s(ctx)
    complete = board.arrive(allocation_id, resources_id, expected)
    gone = asyncio.ensure_future(_client_gone(request))
    try:
        while not complete:
            left = deadline - loop.time()
            if left <= 0:
                await _time_out(ctx, board, allocation_id)
            complete = await board.wait(allocation_id, min(RENDEZVOUS_STEP_S, left))
            if complete:
                break
            if gone.done():
                raise Conflict("the client hung up before the rendezvous completed")
            async with ctx.sessionmaker() as session:
                now = await session.get(Allocation, allocation_id)
                if now is None or now.end_time is not None:
                    board.forget(allocation_id)
                    raise rdv.ended(now or alloc)
    finally:
        gone.cancel()
    async with transaction(ctx.sessionmaker) as session:
        row = await session.get(Allocation, allocation_id)
        if row is not None and not row.ready:
            row.ready = True
    where = {m.agent_id: await _address_of(ctx, m.agent_id) for m in group}
    info = rdv.info_for(group, resources_id, where.__getitem__)
    return AllocationRendezvousInfoResponse(
        rendezvous_info=RendezvousInfo(addresses=info.addresses, rank=info.rank, slots=info.slots)
    )


async def _time_out(ctx: ApiContext, board: rdv.RendezvousBoard, allocation_id: str) -> None:
    """Fail the rendezvous as Determined does: the allocation is killed with its message."""
    board.forget(allocation_id)
    async with transaction(ctx.sessionmaker) as session:
        alloc = await session.get(Allocation, allocation_id)
        if alloc is not None:
            await allocations.request_kill(session, alloc, rdv.TIMEOUT_MESSAGE, ctx.clock())
        pools = take_reschedule(session)
    for pool in pools:
        ctx.scheduling.poke(pool)
    raise rdv.RendezvousTimeout(rdv.TIMEOUT_MESSAGE)


ROUTES = [allocation_rendezvous]
