"""Agents: the WebSocket they dial (the agent protocol), and the REST views users read."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from typing import Annotated

from litestar import WebSocket, get, post, websocket
from litestar.exceptions import WebSocketDisconnect
from litestar.params import Body, Parameter

from agent.protocol import (
    AGENT_ID_PATTERN,
    AGENTS_PATH,
    AgentShutdown,
    AgentStarted,
    ContainerLog,
    ContainerOutput,
    ContainerStateChanged,
    Heartbeat,
    InterruptionNotice,
    MasterInfo,
    MasterSetAgentOptions,
    Message,
    OutputStored,
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
from controlplane.services.db_outage import outage_watch
from controlplane.services.db_unavailable import classify
from controlplane.services.reschedule import take_pokes, take_reschedule
from controlplane.services.scheduling import agent_link
from controlplane.services.scheduling.agent_events import (
    Effects,
    on_container_log,
    on_container_output,
    on_container_state,
)
from controlplane.services.scheduling.agent_loss import refuses_reconnect
from controlplane.services.scheduling.pools import Scheduling
from controlplane.services.scheduling.reattach import mismatch
from controlplane.services.scheduling.registry import AgentHandle, DuplicateAgent

log = logging.getLogger("controlplane.agents")

HANDSHAKE_TIMEOUT_S = 30.0
# WebSocket close code 1013, "Try Again Later" (RFC 6455 registry): the agents' 503. The agent
# dials again with backoff, for its outage budget, without spending a reconnect try.
TRY_AGAIN_LATER = 1013
# Pauses while a report waits for the database: from the first to the most, doubling.
DB_RETRY_FIRST_S = 0.25
DB_RETRY_MAX_S = 5.0
_ID = re.compile(AGENT_ID_PATTERN)
# The same rule the agent's hello is held to, so a malformed id is a 400 before any lookup.
PathAgentId = Annotated[str, Parameter(pattern=AGENT_ID_PATTERN, max_length=255)]


class _Refused(Exception):
    pass


class _Silent(Exception):
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


def _deliver(ctx: ApiContext, effects: Effects, pools: set[str | None]) -> None:
    for agent_id, signal in effects.signals:
        target = ctx.scheduling.registry.get(agent_id)
        if target is not None:
            target.send(signal)
    for pool in pools:
        ctx.scheduling.poke(pool)


async def _pump(socket: WebSocket, handle: AgentHandle) -> None:
    while True:
        message = await handle.outbox.get()
        await socket.send_text(encode(message))


async def _handle(ctx: ApiContext, handle: AgentHandle, message: Message) -> None:
    if isinstance(message, Heartbeat):
        return  # receiving it was the point: the liveness clock restarts
    if isinstance(message, ContainerStateChanged):
        async with transaction(ctx.sessionmaker) as session:
            effects = await on_container_state(
                session,
                handle.id,
                message,
                ctx.clock(),
                interrupted=handle.interrupted_at is not None,
            )
            pokes = take_pokes(session)
        _deliver(ctx, effects, set())
        ctx.scheduling.deliver(pokes)
    elif isinstance(message, ContainerLog):
        async with transaction(ctx.sessionmaker) as session:
            stored = await on_container_log(session, handle.id, message, ctx.clock())
        if not stored:
            log.info(
                "agent %s, unknown container %s: %s",
                handle.id,
                message.container_id,
                message.message,
            )
    elif isinstance(message, ContainerOutput):
        async with transaction(ctx.sessionmaker) as session:
            stored = await on_container_output(session, handle.id, message, ctx.clock())
        # Answered for a batch of a container that is not ours too: the agent lets it go.
        handle.send(OutputStored(container_id=message.container_id, seq=message.seq))
        if not stored:
            log.info(
                "agent %s, unknown container %s: %d output lines dropped",
                handle.id,
                message.container_id,
                len(message.lines),
            )
    elif isinstance(message, InterruptionNotice):
        async with transaction(ctx.sessionmaker) as session:
            stopping = await agent_service.drain_for_interruption(
                session, ctx.scheduling, handle.id, message, ctx.clock()
            )
            pools = take_reschedule(session)
        log.warning(
            "agent %s: %s interruption notice (%s at %s); draining it, preempting %s",
            handle.id,
            message.cloud or "cloud",
            message.action,
            message.deadline.isoformat() if message.deadline else "an unknown time",
            ", ".join(stopping) or "nothing new",
        )
        _deliver(ctx, Effects(), pools)
    elif isinstance(message, AgentStarted):
        log.warning("agent %s sent AgentStarted twice; ignored", handle.id)


async def _handle_patiently(ctx: ApiContext, handle: AgentHandle, message: Message) -> None:
    """Handle `message`, waiting for the database while it is away: the report is kept (in
    order: the agent's next ones wait behind it) instead of dropping the connection with a
    traceback. A failed try stored nothing (its transaction rolled back), so trying again is
    safe. The outage is logged once, by the master's database watch."""
    pause = DB_RETRY_FIRST_S
    while True:
        try:
            await _handle(ctx, handle, message)
            return
        except Exception as exc:
            kind = classify(exc)
            if kind is None:
                raise
            outage_watch(ctx.sessionmaker).unavailable(exc, kind, f"agent {handle.id}'s reports")
        await asyncio.sleep(pause)
        pause = min(DB_RETRY_MAX_S, pause * 2)


async def _receive(socket: WebSocket, timeout_s: float) -> str:
    try:
        return await asyncio.wait_for(socket.receive_text(), timeout_s)
    except TimeoutError:
        raise _Silent(f"no message for {timeout_s:g}s") from None


async def _drop_changed_agent(ctx: ApiContext, agent_id: str, why: str) -> None:
    """An agent came back with other devices or another pool: its work fails, it is forgotten
    (Determined sends AgentShutdown; the agent restarts afresh)."""
    async with transaction(ctx.sessionmaker) as session:
        effects = await agent_link.fail_agent_work(session, agent_id, why, ctx.clock())
        pools = take_reschedule(session)
    ctx.scheduling.registry.remove_if_disconnected(agent_id)
    _deliver(ctx, effects, pools)


def _pool_task_python(scheduling: Scheduling, pool: str) -> str:
    """The pool's default task Python (task_container_defaults.python), for its agents."""
    try:
        return scheduling.resources.task_python(pool)
    except KeyError:  # not a pool of ours: the hello check refuses such an agent
        return ""


async def _handshake(
    socket: WebSocket, ctx: ApiContext, agent_id: str, pool: str, reconnect: bool
) -> AgentHandle:
    """Options (with the containers to reattach) out, AgentStarted in, then registration and
    the reattach reconciliation. Raises _Refused with the reason to send back."""
    scheduling = ctx.scheduling
    _check_hello(ctx, agent_id, pool)
    previous = scheduling.registry.get(agent_id)
    async with transaction(ctx.sessionmaker) as session:
        expected = await agent_link.expected_containers(session, agent_id)
    if reconnect and refuses_reconnect(
        known=previous is not None,
        has_allocations=bool(expected),
        now=ctx.clock(),
        master_started_at=scheduling.started_at,
        wait=scheduling.reconnect_wait(pool),
    ):
        raise _Refused(f"agent {agent_id!r} is past its reconnect period; it must restart")
    info = MasterInfo(
        version=ctx.version,
        master_id=ctx.master_id,
        cluster_id=ctx.cluster_id,
        cluster_name=ctx.cluster_name,
    )
    options = MasterSetAgentOptions(
        master_info=info,
        containers_to_reattach=agent_link.reattach_list(
            expected, previous.devices if previous else ()
        ),
        heartbeat_interval_s=scheduling.heartbeat_interval_s,
        liveness_timeout_s=scheduling.liveness_timeout_s,
        task_python=_pool_task_python(scheduling, pool),
    )
    await socket.send_text(encode(options))
    started = decode_to_master(await asyncio.wait_for(socket.receive_text(), HANDSHAKE_TIMEOUT_S))
    if not isinstance(started, AgentStarted):
        raise _Refused(f"expected AgentStarted first, got {type(started).__name__}")
    why = mismatch(
        agent_id=agent_id,
        pool=pool,
        devices=started.devices,
        previous_pool=previous.resource_pool if previous else None,
        previous_devices=previous.devices if previous else None,
        expected=expected,
    )
    if why:
        await _drop_changed_agent(ctx, agent_id, why)
        raise _Refused(why)
    handle = scheduling.registry.register(
        AgentHandle(
            id=agent_id,
            resource_pool=pool,
            devices=started.devices,
            version=started.version,
            registered_at=ctx.clock(),
            addresses=started.addresses,
            hostname=str(socket.query_params.get("hostname") or ""),
        )
    )
    try:
        async with transaction(ctx.sessionmaker) as session:
            effects = await agent_link.apply_reattach(
                session, agent_id, started.containers_reattached, ctx.clock()
            )
            pools = take_reschedule(session)
    except BaseException:
        # Registered but not reconciled: count it as gone, so that it can dial again.
        scheduling.registry.disconnected(agent_id, ctx.clock())
        raise
    _deliver(ctx, effects, pools)
    return handle


@websocket(AGENTS_PATH)
async def agent_socket(socket: WebSocket) -> None:
    ctx = ctx_of(socket.app.state)
    q = socket.query_params
    agent_id = str(q.get("id") or "")
    pool = str(q.get("resource_pool") or "default")
    reconnect = str(q.get("reconnect") or "false").lower() == "true"
    await socket.accept()
    try:
        handle = await _handshake(socket, ctx, agent_id, pool, reconnect)
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
    except Exception as exc:
        kind = classify(exc)
        if kind is not None:  # the agents' 503: no traceback, the agent dials again later
            outage_watch(ctx.sessionmaker).unavailable(exc, kind, f"agent {agent_id}'s handshake")
            with contextlib.suppress(Exception):
                await socket.close(code=TRY_AGAIN_LATER, reason="the database is unavailable")
            return
        log.exception("agent %r: the handshake failed", agent_id)
        with contextlib.suppress(Exception):
            await socket.close(code=1011, reason="the master could not register the agent")
        return

    log.info("agent %s registered in pool %s with %d slots", agent_id, pool, handle.slots)
    ctx.scheduling.poke(pool)
    sender = asyncio.create_task(_pump(socket, handle))
    try:
        while True:
            text = await _receive(socket, ctx.scheduling.liveness_timeout_s)
            try:
                message = decode_to_master(text)
            except ProtocolError as exc:
                log.warning("agent %s sent a bad frame: %s", agent_id, exc)
                continue
            await _handle_patiently(ctx, handle, message)
    except WebSocketDisconnect:
        pass
    except _Silent as exc:
        # An agent that stops answering is treated as gone: the reconnect wait starts now.
        log.warning("agent %s: %s; dropping its connection", agent_id, exc)
    except Exception:
        # A report the master could not record must not be lost quietly: drop the connection,
        # and the agent's reconnect reconciles its containers again.
        log.exception("agent %s: handling a message failed; dropping its connection", agent_id)
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender
        with contextlib.suppress(Exception):
            await socket.close(code=1001, reason="connection dropped by the master")
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
            enabled=handle.shown_enabled and d.id not in handle.disabled_devices,
            draining=handle.shown_draining,
            container=containers[holder.container_id] if holder else None,
        )
        for stats in (
            type_stats.setdefault(_DEVICE_TYPES[d.type.value].value, DeviceStats()),
            brand_stats.setdefault(d.brand, DeviceStats()),
        ):
            stats.total += 1
            stats.allocated += 1 if holder else 0
            stats.disabled += (
                0 if handle.shown_enabled and d.id not in handle.disabled_devices else 1
            )
            stats.draining += 1 if handle.shown_draining else 0
    return Agent(
        id=handle.id,
        registered_time=handle.registered_at.isoformat().replace("+00:00", "Z"),
        slots=slots,
        containers=containers,
        resource_pools=[handle.resource_pool],
        addresses=list(handle.addresses),
        enabled=handle.shown_enabled,
        draining=handle.shown_draining,
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
async def get_agent(db: Db, principal: Caller, ctx: Ctx, agent_id: PathAgentId) -> GetAgentResponse:
    handle = agent_service.get_agent(ctx.scheduling, agent_id)
    placed = await agent_service.containers_by_agent(db)
    return GetAgentResponse(agent=agent_out(handle, placed.get(agent_id, [])))


@post("/api/v1/agents/{agent_id:str}/enable", status_code=200)
async def enable_agent(db: Db, principal: Caller, ctx: Ctx, agent_id: PathAgentId) -> AgentResponse:
    handle = await agent_service.set_enabled(
        db, ctx.scheduling, principal.user, agent_id, enabled=True, now=ctx.clock()
    )
    placed = await agent_service.containers_by_agent(db)
    return AgentResponse(agent=agent_out(handle, placed.get(agent_id, [])))


@post("/api/v1/agents/{agent_id:str}/disable", status_code=200)
async def disable_agent(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    agent_id: PathAgentId,
    data: Annotated[DisableAgentRequest | None, Body()] = None,
) -> AgentResponse:
    drain = bool(data and data.drain)
    handle = await agent_service.set_enabled(
        db, ctx.scheduling, principal.user, agent_id, enabled=False, drain=drain, now=ctx.clock()
    )
    placed = await agent_service.containers_by_agent(db)
    return AgentResponse(agent=agent_out(handle, placed.get(agent_id, [])))


ROUTES = [agent_socket, list_agents, get_agent, enable_agent, disable_agent]
