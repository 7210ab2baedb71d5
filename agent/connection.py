"""Dialing the master: the agent socket's URL, TLS, and the first frame of the handshake."""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from urllib.parse import urlencode

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from agent.config import AgentSettings
from agent.protocol import (
    AGENTS_PATH,
    MAX_MESSAGE_BYTES,
    AgentShutdown,
    MasterSetAgentOptions,
    ProtocolError,
    decode_to_agent,
)

OPEN_TIMEOUT_S = 10.0
HANDSHAKE_TIMEOUT_S = 30.0
# The master's WebSocket server answers pings; a master that stops answering for
# PING_INTERVAL_S + PING_TIMEOUT_S is treated as gone (Determined: ping 15 s, deadline 60 s).
PING_INTERVAL_S = 15.0
PING_TIMEOUT_S = 45.0


class DialFailed(Exception):
    """This try to reach the master failed; another try may work."""


class TryAgainLater(DialFailed):
    """The master is up but cannot serve agents now (its database is away): it closed the
    socket with 1013, "try again later", the agents' 503."""


TRY_AGAIN_LATER = 1013


@dataclass(frozen=True)
class Refused:
    """The master answered with AgentShutdown: trying again will not help."""

    reason: str


def agent_url(settings: AgentSettings, *, reconnect: bool, version: str, hostname: str) -> str:
    scheme = "wss" if settings.security.tls.enabled else "ws"
    query = urlencode(
        {
            "id": settings.agent_id,
            "version": version,
            "resource_pool": settings.resource_pool,
            "reconnect": "true" if reconnect else "false",
            "hostname": hostname,
        }
    )
    return f"{scheme}://{settings.master_host}:{settings.master_port}{AGENTS_PATH}?{query}"


def ssl_context(settings: AgentSettings) -> ssl.SSLContext | None:
    tls = settings.security.tls
    if not tls.enabled:
        return None
    context = ssl.create_default_context(
        cafile=str(tls.master_cert) if tls.master_cert is not None else None
    )
    if tls.skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


async def dial(
    settings: AgentSettings, *, reconnect: bool, version: str, hostname: str
) -> tuple[ClientConnection, MasterSetAgentOptions] | Refused:
    """Open the socket and read the master's first frame. Raises DialFailed for a failed try."""
    url = agent_url(settings, reconnect=reconnect, version=version, hostname=hostname)
    tls = settings.security.tls
    extra = {}
    if tls.enabled:
        extra["ssl"] = ssl_context(settings)
        if tls.master_cert_name:
            extra["server_hostname"] = tls.master_cert_name
    try:
        ws = await connect(
            url,
            open_timeout=OPEN_TIMEOUT_S,
            ping_interval=PING_INTERVAL_S,
            ping_timeout=PING_TIMEOUT_S,
            max_size=MAX_MESSAGE_BYTES,
            # Small JSON frames to the master: deflating each cost both ends more CPU than the
            # bytes it saved (one zlib stream per direction, per agent).
            compression=None,
            **extra,
        )
    except InvalidURI as exc:
        raise DialFailed(f"bad master address: {exc}") from exc
    except (OSError, TimeoutError, InvalidHandshake) as exc:
        raise DialFailed(f"cannot connect to {url.split('?')[0]}: {exc}") from exc
    try:
        first = decode_to_agent(await asyncio.wait_for(ws.recv(), HANDSHAKE_TIMEOUT_S))
    except (ConnectionClosed, TimeoutError, ProtocolError) as exc:
        await ws.close()
        if isinstance(exc, ConnectionClosed) and exc.rcvd and exc.rcvd.code == TRY_AGAIN_LATER:
            raise TryAgainLater(f"the master asks to try again later: {exc.rcvd.reason}") from exc
        raise DialFailed(f"no handshake from the master: {exc}") from exc
    if isinstance(first, AgentShutdown):
        await ws.close()
        return Refused(first.error)
    if not isinstance(first, MasterSetAgentOptions):
        await ws.close()
        raise DialFailed(f"expected MasterSetAgentOptions first, got {type(first).__name__}")
    return ws, first
