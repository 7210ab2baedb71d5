"""Agents: the WebSocket they dial (the agent protocol), and the REST views users read."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from typing import Annotated

from litestar import WebSocket, get, post, websocket
from litestar.exceptions import WebSocketDisconnect
from litestar.params import Body, FromPath

from agent.protocol import (
    AGENT_ID_PATTERN,
    AGENTS_PATH,
    AgentShutdown,
    AgentStarted,
    ContainerLog,
    ContainerStateChanged,
    MasterInfo,
    MasterSetAgentOptions,
    Message,
    ProtocolError,
    decode_to_master,
    encode,
)
from controlplane.api.deps import ApiContext, Caller, Ctx, Db, ctx_of
from controlplane.api.params import Limit, Offset, clamp_limit
from controlplane.api.schemas.agents import (
    Agent,
    AgentResponse,
    DeviceStats,
    DeviceType,
    DisableAgentRequest,
    GetAgentResponse,
    GetAgentsResponse,
    Slot,
    SlotStats,
)
from controlplane.api.schemas.agents import (
    Container as ContainerOut,
)
from controlplane.api.schemas.agents import (
    ContainerState as WireContainerState,
)
from controlplane.api.schemas.agents import (
    Device as DeviceOut,
)
from controlplane.api.schemas.common import Pagination
from controlplane.db.session import transaction
from controlplane.services import agents as agent_service
from controlplane.services.scheduling import take_reschedule
from controlplane.services.scheduling.agent_events import on_container_state
from controlplane.services.scheduling.registry import AgentHandle, DuplicateAgent

log = logging.getLogger("controlplane.agents")

HANDSHAKE_TIMEOUT_S = 30.0
_ID = re.compile(AGENT_ID_PATTERN)


class _Refused(Exception):
    pass


def _check_hello(ctx: ApiContext, agent_id: str, pool: str) -> None:
    if not _ID.match(agent_id):
        raise _Refused(
            f"invalid agent id {agent_id!r}: use letters, digits, '.', '_' or '-' (max 255)"
        )
    if pool not in ctx.scheduling.pools:
        known = ", ".join(sorted(ctx.scheduling.pools))
        raise _Refused(f"resource pool {pool!r} does not exist (pools: {known})")
    existing = ctx.scheduling.registry.get(agent_id)
    if existing is not None and existing.connected:
        raise _Refused(f"agent {agent_id!r}: websocket already connected")


async def _pump(socket: WebSocket, handle: AgentHandle) -> None:
    while True:
        message = await handle.outbox.get()
        await socket.send_text(encode(message))


async def _handle(ctx: ApiContext, handle: AgentHandle, message: Message) -> None:
    if isinstance(message, ContainerStateChanged):
        async with transaction(ctx.sessionmaker) as session:
            effects = await on_container_state(session, handle.id, message, ctx.clock())
            pools = take_reschedule(session)
        for agent_id, signal in effects.signals:
            target = ctx.scheduling.registry.get(agent_id)
            if target is not None:
                target.send(signal)
        for pool in pools:
            ctx.scheduling.poke(pool)
    elif isinstance(message, ContainerLog):
        log.debug("agent %s container %s: %s", handle.id, message.container_id, message.message)
    elif isinstance(message, AgentStarted):
        log.warning("agent %s sent AgentStarted twice; ignored", handle.id)


@websocket(AGENTS_PATH)
async def agent_socket(socket: WebSocket) -> None:
    ctx = ctx_of(socket.app.state)
    q = socket.query_params
    agent_id = str(q.get("id") or "")
    pool = str(q.get("resource_pool") or "default")
    await socket.accept()
    try:
        _check_hello(ctx, agent_id, pool)
        info = MasterInfo(
            version=ctx.version,
            master_id=ctx.master_id,
            cluster_id=ctx.cluster_id,
            cluster_name=ctx.cluster_name,
        )
        await socket.send_text(encode(MasterSetAgentOptions(master_info=info)))
        text = await asyncio.wait_for(socket.receive_text(), HANDSHAKE_TIMEOUT_S)
        started = decode_to_master(text)
        if not isinstance(started, AgentStarted):
            raise _Refused(f"expected AgentStarted first, got {type(started).__name__}")
        handle = ctx.scheduling.registry.register(
            AgentHandle(
                id=agent_id,
                resource_pool=pool,
                devices=started.devices,
                version=started.version,
                registered_at=ctx.clock(),
                addresses=started.addresses,
                hostname=str(q.get("hostname") or ""),
            )
        )
    except (_Refused, ProtocolError, DuplicateAgent) as exc:
        log.warning("refused agent %r: %s", agent_id, exc)
        with contextlib.suppress(Exception):
            await socket.send_text(encode(AgentShutdown(error=str(exc))))
            await socket.close(code=1008, reason=str(exc)[:120])
        return
    except (TimeoutError, WebSocketDisconnect):
        with contextlib.suppress(Exception):
            await socket.close(code=1002, reason="no AgentStarted")
        return

    log.info("agent %s registered in pool %s with %d slots", agent_id, pool, handle.slots)
    ctx.scheduling.poke(pool)
    sender = asyncio.create_task(_pump(socket, handle))
    try:
        while True:
            text = await socket.receive_text()
            try:
                message = decode_to_master(text)
            except ProtocolError as exc:
                log.warning("agent %s sent a bad frame: %s", agent_id, exc)
                continue
            await _handle(ctx, handle, message)
    except WebSocketDisconnect:
        pass
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender
        ctx.scheduling.registry.disconnected(agent_id, ctx.clock())
        ctx.scheduling.poke(pool)
        log.info("agent %s disconnected", agent_id)


# --- REST ------------------------------------------------------------------------------------

_DEVICE_TYPES = {"cuda": DeviceType.CUDA, "rocm": DeviceType.ROCM, "cpu": DeviceType.CPU}


def agent_out(handle: AgentHandle, placed: list[agent_service.PlacedContainer]) -> Agent:
    by_device: dict[int, agent_service.PlacedContainer] = {}
    containers: dict[str, ContainerOut] = {}
    devices = {d.id: d for d in handle.devices}

    def dev(device_id: int) -> DeviceOut:
        d = devices.get(device_id)
        if d is None:
            return DeviceOut(id=device_id, brand="", uuid="", type=DeviceType.UNSPECIFIED)
        return DeviceOut(id=d.id, brand=d.brand, uuid=d.uuid, type=_DEVICE_TYPES[d.type.value])

    for p in placed:
        containers[p.container_id] = ContainerOut(
            id=p.container_id,
            parent=p.allocation_id,
            state=WireContainerState(f"STATE_{p.state}"),
            devices=[dev(i) for i in p.device_ids],
        )
        for device_id in p.device_ids:
            by_device[device_id] = p
    slots: dict[str, Slot] = {}
    type_stats: dict[str, DeviceStats] = {}
    brand_stats: dict[str, DeviceStats] = {}
    for d in handle.devices:
        holder = by_device.get(d.id)
        slots[str(d.id)] = Slot(
            id=str(d.id),
            device=dev(d.id),
            enabled=handle.enabled,
            draining=handle.draining,
            container=containers[holder.container_id] if holder else None,
        )
        for stats in (
            type_stats.setdefault(_DEVICE_TYPES[d.type.value].value, DeviceStats()),
            brand_stats.setdefault(d.brand, DeviceStats()),
        ):
            stats.total += 1
            stats.allocated += 1 if holder else 0
            stats.disabled += 0 if handle.enabled else 1
            stats.draining += 1 if handle.draining else 0
    return Agent(
        id=handle.id,
        registered_time=handle.registered_at.isoformat().replace("+00:00", "Z"),
        slots=slots,
        containers=containers,
        resource_pools=[handle.resource_pool],
        addresses=list(handle.addresses),
        enabled=handle.enabled,
        draining=handle.draining,
        version=handle.version,
        slot_stats=SlotStats(type_stats=type_stats, brand_stats=brand_stats),
        connected=handle.connected,
    )


@get("/api/v1/agents")
async def list_agents(
    db: Db, principal: Caller, ctx: Ctx, offset: Offset = 0, limit: Limit = 0
) -> GetAgentsResponse:
    placed = await agent_service.containers_by_agent(db)
    handles = list(ctx.scheduling.registry)
    page = clamp_limit(limit, default=-1)
    chunk = handles[offset:] if page < 0 else handles[offset : offset + page]
    return GetAgentsResponse(
        agents=[agent_out(h, placed.get(h.id, [])) for h in chunk],
        pagination=Pagination.of(offset, page, len(chunk), len(handles)),
    )


@get("/api/v1/agents/{agent_id:str}")
async def get_agent(
    db: Db, principal: Caller, ctx: Ctx, agent_id: FromPath[str]
) -> GetAgentResponse:
    handle = agent_service.get_agent(ctx.scheduling, agent_id)
    placed = await agent_service.containers_by_agent(db)
    return GetAgentResponse(agent=agent_out(handle, placed.get(agent_id, [])))


@post("/api/v1/agents/{agent_id:str}/enable", status_code=200)
async def enable_agent(
    db: Db, principal: Caller, ctx: Ctx, agent_id: FromPath[str]
) -> AgentResponse:
    handle = agent_service.set_enabled(ctx.scheduling, principal.user, agent_id, enabled=True)
    placed = await agent_service.containers_by_agent(db)
    return AgentResponse(agent=agent_out(handle, placed.get(agent_id, [])))


@post("/api/v1/agents/{agent_id:str}/disable", status_code=200)
async def disable_agent(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    agent_id: FromPath[str],
    data: Annotated[DisableAgentRequest | None, Body()] = None,
) -> AgentResponse:
    drain = bool(data and data.drain)
    handle = agent_service.set_enabled(
        ctx.scheduling, principal.user, agent_id, enabled=False, drain=drain
    )
    placed = await agent_service.containers_by_agent(db)
    return AgentResponse(agent=agent_out(handle, placed.get(agent_id, [])))


ROUTES = [agent_socket, list_agents, get_agent, enable_agent, disable_agent]
