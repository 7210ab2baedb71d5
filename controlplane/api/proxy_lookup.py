"""Who may reach which proxied service, and where it is: the proxy's lookup (api/proxy.py serves).

A request names a service (`/proxy/{task id}/` for an interactive task's own service, `/proxy/
{task id}:{port}/` for a port of its `environment.proxy_ports`, see proxy_services); the visitor
proves who they are with a bearer token, the UI's `auth` cookie (on the master's origin) or a
task origin's own cookie, except where nobody need (a shell's WebSocket, an `unauthenticated`
port); the owner and admins get through. The result, a `Target`, is cached for a moment per
(credentials, service) and checked again at connect time against the task's agent's addresses
and ports (`_connect_address`).
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http.cookies import CookieError, SimpleCookie
from typing import Any

from litestar.datastructures import State
from sqlalchemy import select

from controlplane.api import proxy_address, proxy_origin, proxy_services
from controlplane.api.deps import ctx_of
from controlplane.db.models import Allocation, Command, Task, User, UserSession
from controlplane.domain.errors import NotFound, PermissionDenied, Unauthenticated, Unavailable
from controlplane.domain.proxy_ports import split_service
from controlplane.services import auth

Scope = MutableMapping[str, Any]

INTERACTIVE_TYPES = ("NOTEBOOK", "TENSORBOARD", "SHELL")


@dataclass(frozen=True)
class Target:
    task_id: str
    task_type: str
    address: str
    owner_id: int
    secret: str | None = None
    # How the visitor proved who they are: "bearer", "cookie" (the UI's session cookie, on the
    # master's origin), "task_cookie" (a task origin's own cookie) or "none" (a shell's socket).
    credential: str = "bearer"
    # The visitor's session (id, the SHA-256 of its token, its expiry in unix seconds): what
    # signs a ticket to the task's origin.
    session: tuple[int, str, int] | None = None
    # The address connected to: the agent's IP the reported address resolved to when checked.
    connect: str = ""
    # A port of the task's `environment.proxy_ports` (proxy_services), None for the service an
    # interactive task reported; and whether a WebSocket to it carries raw TCP (`proxy_tcp`).
    port: int | None = None
    tcp: bool = False

    @property
    def dial(self) -> str:
        return self.connect or self.address


class TargetCache:
    """Resolved (credentials, task) -> target for a moment: a page load is dozens of requests,
    and a database round trip for each would double the proxy's cost. Only successes are kept,
    for `ttl_s`, so a token revoked or expired is refused within that time; a task found gone
    is dropped at once (`forget_task`). Concurrent misses for one key share one lookup: a
    page's parallel requests would otherwise each query the database when an entry expires."""

    def __init__(self, ttl_s: float = 2.0, max_entries: int = 10_000) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[tuple[bytes, str, bool], tuple[float, Target]] = {}
        self._pending: dict[tuple[bytes, str, bool], asyncio.Future[Target]] = {}

    def get(self, key: tuple[bytes, str, bool]) -> Target | None:
        found = self._entries.get(key)
        if found is None or found[0] < time.monotonic():
            return None
        return found[1]

    def put(self, key: tuple[bytes, str, bool], target: Target) -> None:
        if len(self._entries) >= self.max_entries:
            self._entries.clear()
        self._entries[key] = (time.monotonic() + self.ttl_s, target)

    async def resolve(
        self, key: tuple[bytes, str, bool], lookup: Callable[[], Awaitable[Target]]
    ) -> Target:
        found = self.get(key)
        if found is not None:
            return found
        pending = self._pending.get(key)
        if pending is None:
            pending = asyncio.ensure_future(lookup())
            self._pending[key] = pending
            pending.add_done_callback(lambda done: self._settle(key, done))
        # Shielded: a client that leaves must not cancel the lookup others wait on.
        return await asyncio.shield(pending)

    def _settle(self, key: tuple[bytes, str, bool], done: asyncio.Future[Target]) -> None:
        self._pending.pop(key, None)
        if not done.cancelled() and done.exception() is None:
            self.put(key, done.result())

    def forget_task(self, task_id: str) -> None:
        ports = task_id + ":"  # the task's proxy_ports are service ids of their own
        for key in [k for k in self._entries if k[1] == task_id or k[1].startswith(ports)]:
            del self._entries[key]


def _cookie_token(headers: dict[str, str]) -> str | None:
    raw = headers.get("cookie")
    if not raw:
        return None
    try:
        jar = SimpleCookie(raw)
    except CookieError:
        return None
    morsel = jar.get("auth")
    return morsel.value if morsel is not None and morsel.value else None


def _token(headers: dict[str, str]) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return _cookie_token(headers)


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers", []):
        name = k.decode("latin-1").lower()
        value = v.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out and name != "cookie" else value
    return out


_CREDENTIALS = (b"authorization", b"cookie")


def _credentials(scope: Scope) -> bytes:
    """The request's raw credential headers, as the cache's key: parsing them (a cookie jar)
    is left to a miss. Which credential counts depends on the origin; `plan` refuses a target
    found by a credential that does not count where the request was addressed."""
    found = [k + b":" + v for k, v in scope.get("headers", []) if k in _CREDENTIALS]
    return b"\n".join(found)


async def _resolve(state: State, scope: Scope, task_id: str, is_ws: bool) -> Target:
    cache: TargetCache = state["proxy_targets"]
    key = (_credentials(scope), task_id, is_ws)
    return await cache.resolve(key, lambda: _lookup(state, scope, task_id, is_ws))


def proxy_domain(state: State) -> str | None:
    """The master's `proxy_domain` setting (None: the default, see proxy_origin)."""
    return state.get("proxy_domain")


def on_task_origin(headers: dict[str, str], state: State) -> str | None:
    """The task whose own origin the request was addressed to, if any."""
    return proxy_origin.task_of_host(headers.get("host"), proxy_domain(state))


async def _session_of(session: Any, token: str, now: datetime) -> tuple[User, tuple[int, str, int]]:
    """The UI's cookie: its user and session (which signs the ticket to a task's origin)."""
    user = await auth.user_for_token(session, token, now=now)
    digest = auth.token_digest(token)
    row = (
        await session.execute(
            select(UserSession.id, UserSession.expires_at).where(UserSession.token_hash == digest)
        )
    ).first()
    if row is None:
        raise Unauthenticated("invalid or expired token")
    return user, (row.id, digest, int(_utc(row.expires_at).timestamp()))


def _utc(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


async def _signed_user(
    session: Any, value: str, kind: str, task_id: str, now: datetime
) -> tuple[User, tuple[int, str, int], proxy_origin.Signed]:
    """The user of a task cookie or ticket whose signature, task and expiry hold, and whose
    session still exists (a logout ends them all)."""
    ended = "this task's session has ended: open it again from the web UI or `det notebook open`"
    signed = proxy_origin.read_signed(value, kind)
    if signed is None:
        raise Unauthenticated(ended)
    row = (
        await session.execute(
            select(User, UserSession.token_hash, UserSession.expires_at)
            .join(UserSession, UserSession.user_id == User.id)
            .where(UserSession.id == signed.session_id)
        )
    ).first()
    if row is None:
        raise Unauthenticated(ended)
    user, key, expires_at = row
    expires = _utc(expires_at)
    if expires <= now or not user.active:
        raise Unauthenticated(ended)
    if not proxy_origin.verify(value, signed, key, task_id, now.timestamp()):
        raise Unauthenticated(ended)
    return user, (signed.session_id, key, int(expires.timestamp())), signed


async def _lookup(state: State, scope: Scope, service_id: str, is_ws: bool) -> Target:
    ctx = ctx_of(state)
    headers = _headers(scope)
    task_host = on_task_origin(headers, state)
    now = ctx.clock()
    task_id, port = split_service(service_id)
    async with ctx.sessionmaker() as session:
        row = None
        if port is None:
            row = (
                await session.execute(
                    select(
                        Task.task_type,
                        Task.owner_id,
                        Task.end_time,
                        Allocation.proxy_address,
                        Allocation.proxy_secret,
                        Allocation.placement,
                        Command.config,
                    )
                    .outerjoin(
                        Allocation,
                        (Allocation.task_id == Task.task_id) & Allocation.end_time.is_(None),
                    )
                    .outerjoin(Command, Command.task_id == Task.task_id)
                    .where(Task.task_id == task_id)
                )
            ).first()
        if port is not None or (row is not None and row.task_type not in INTERACTIVE_TYPES):
            return await _lookup_port(state, session, headers, service_id, port, now)
        public_shell = is_ws and row is not None and row.task_type == "SHELL"
        user, credential, visit = await _visitor(
            session, headers, task_host, task_id, now, public_shell
        )
    if row is None or row.task_type not in INTERACTIVE_TYPES:
        raise NotFound(f"interactive task {task_id} not found")
    if user is not None and not (user.admin or user.id == row.owner_id):
        raise PermissionDenied(f"only the owner of task {task_id} or an admin may reach it")
    if row.end_time is not None:
        raise NotFound(f"task {task_id} has ended")
    if not row.proxy_address:
        raise Unavailable(f"task {task_id} is not serving yet; wait until it is ready")
    connect = await _connect_address(state, task_id, row.proxy_address, row.placement, row.config)
    return Target(
        task_id, row.task_type, row.proxy_address, row.owner_id, row.proxy_secret,
        credential, visit, connect,
    )  # fmt: skip


async def _visitor(
    session: Any, headers: dict[str, str], task_host: str | None, task_id: str,
    now: datetime, public: bool,
) -> tuple[User | None, str, tuple[int, str, int] | None]:  # fmt: skip
    """Who asks (None for nobody, where `public` lets nobody in), how they proved it (see
    Target.credential) and their UI session, if that is how."""
    scheme, _, value = headers.get("authorization", "").partition(" ")
    token = value.strip() if scheme.lower() == "bearer" and value.strip() else None
    task_cookie = proxy_origin.cookie_value(headers.get("cookie", ""), proxy_origin.PROXY_COOKIE)
    if token is not None:
        return await auth.user_for_token(session, token, now=now), "bearer", None
    if task_host is not None and task_cookie:
        user, visit, _ = await _signed_user(session, task_cookie, "cookie", task_id, now)
        return user, "task_cookie", visit
    if task_host is None and (cookie := _cookie_token(headers)) is not None:
        user, visit = await _session_of(session, cookie, now)
        return user, "cookie", visit
    if not public:
        raise Unauthenticated("authentication required: log in with `det user login`")
    return None, "none", None


async def _lookup_port(
    state: State, session: Any, headers: dict[str, str], service_id: str, port: int | None,
    now: datetime,
) -> Target:  # fmt: skip
    """A port of the task's `environment.proxy_ports` (proxy_services): owner or admin, or
    anyone where it is declared `unauthenticated` (whose credentials are then not even read;
    none reaches the task either way)."""
    task_id, _ = split_service(service_id)
    service = await proxy_services.find(session, task_id, port)
    public = service is not None and service.declared.unauthenticated
    user, credential, visit = (
        (None, "none", None)
        if public
        else await _visitor(session, headers, on_task_origin(headers, state), task_id, now, False)
    )
    if service is None:
        raise proxy_services.not_found(service_id, port)
    if user is not None and not (user.admin or user.id == service.owner_id):
        raise PermissionDenied(f"only the owner of task {task_id} or an admin may reach it")
    registry = ctx_of(state).scheduling.registry
    handles = [registry.get(agent_id) for agent_id in service.chief]
    hosts = proxy_address.agent_hosts(h.addresses if h is not None else None for h in handles)
    address = proxy_services.ready(service, hosts)
    connect = await _connect_address(state, task_id, address, service.chief, service.config)
    return Target(
        task_id, service.task_type, address, service.owner_id, None, credential, visit, connect,
        port=service.declared.port, tcp=service.declared.tcp,
    )  # fmt: skip


async def _resolve_host(host: str) -> set[str]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return set()
    return {str(info[4][0]) for info in infos}


async def _connect_address(
    state: State, task_id: str, address: str, placement: Any, config: Any
) -> str:
    """The address's check again at connect time (`proxy_address`), then its name resolved:
    the proxy connects to the resolved IP only if it is one of the agent's, so a name that
    resolves elsewhere (or changes after the check) never takes it anywhere else."""
    registry = ctx_of(state).scheduling.registry
    handles = [registry.get(agent_id) for agent_id in (placement or {})]
    hosts = proxy_address.agent_hosts(h.addresses if h is not None else None for h in handles)
    facts = proxy_address.AllocationFacts.of(task_id, hosts, config)
    verdict = proxy_address.check(address, facts)
    if not verdict.allowed:
        raise PermissionDenied(f"the proxy does not connect there: {verdict.reason}")
    host, port = proxy_address.parse(address) or ("", 0)
    agent_ips: set[str] = set()
    for agent_host in facts.agent_hosts:
        agent_ips |= await _resolve_host(agent_host)
    ip, why = proxy_address.check_resolved(await _resolve_host(host), agent_ips)
    if ip is None:
        raise PermissionDenied(f"the proxy does not connect there: {why}")
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
