"""Where and how the proxy serves a visitor who may reach a task (api/proxy_origin explains the
rules): on the task's own origin, sandboxed on the master's, or sent to the task's origin with a
one-time ticket, which the task's origin trades for its own cookie (`trade_ticket`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from litestar.datastructures import State
from sqlalchemy import select

from controlplane.api import proxy_origin
from controlplane.api.deps import ctx_of
from controlplane.api.proxy_lookup import INTERACTIVE_TYPES, Target, _signed_user, proxy_domain
from controlplane.db.models import Task
from controlplane.domain.errors import NotFound, PermissionDenied, Unauthenticated

PREFIX = "/proxy/"


@dataclass(frozen=True)
class Plan:
    """What to do with a request whose visitor may reach the task: serve it (status 0) adding
    `headers` to the service's answer, or answer `status` (a redirect with `headers`, or an
    error with `message`) without reaching the task."""

    status: int = 0
    message: str = ""
    headers: tuple[tuple[bytes, bytes], ...] = ()


_SANDBOXED = Plan(headers=((b"content-security-policy", proxy_origin.SANDBOX_CSP),))
_ON_TASK_ORIGIN = Plan(headers=((b"content-security-policy", proxy_origin.TASK_CSP),))
_GRPC = {401: 16, 403: 7, 404: 5}
_EVIDENCE = (b"host", b"origin", b"sec-fetch-site", b"sec-fetch-mode")


def evidence(headers: list[tuple[bytes, bytes]]) -> dict[bytes, str]:
    """The headers that say where a request comes from (names lowercased, as ASGI has them)."""
    return {k: v.decode("latin-1") for k, v in headers if k in _EVIDENCE}


def plan(
    state: State, seen: dict[bytes, str], method: str, is_ws: bool, scheme: str,
    url: str, t: Target,
) -> Plan:  # fmt: skip
    """How to serve a request for target `t` (proxy_origin explains the rules)."""
    host = seen.get(b"host", "")
    configured = proxy_domain(state)
    task_host = proxy_origin.task_of_host(host, configured)
    if t.port is not None:
        return _plan_port(task_host, method, is_ws, t)
    if task_host is not None:
        if task_host != t.task_id:
            return Plan(404, f"this origin serves task {task_host} only")
        if t.credential not in ("task_cookie", "bearer"):
            return Plan(401, "authentication required: open this task from the web UI")
        if t.credential == "task_cookie":
            why = proxy_origin.cross_site_refusal(
                method, is_ws, seen.get(b"origin"), seen.get(b"sec-fetch-site"),
                seen.get(b"sec-fetch-mode"), f"{scheme}://{host}",
            )  # fmt: skip
            if why is not None:
                return Plan(403, why)
        return _ON_TASK_ORIGIN
    if t.credential == "task_cookie":
        return Plan(401, "authentication required: a task's cookie counts on its origin alone")
    if t.credential != "cookie" or t.session is None:
        return _SANDBOXED
    domain = proxy_origin.task_domain(configured, host)
    if domain is None:
        return _SANDBOXED
    origin = proxy_origin.task_origin(t.task_id, domain, scheme, host)
    if is_ws or method not in ("GET", "HEAD"):
        return Plan(403, f"open this task at its own origin: {origin}{PREFIX}{t.task_id}/")
    session_id, key, _ = t.session
    expires = int(ctx_of(state).clock().timestamp()) + proxy_origin.TICKET_TTL_S
    ticket = proxy_origin.sign(
        "ticket", session_id, key, t.task_id, expires, secrets.token_urlsafe(12)
    )
    parts = urlsplit(url)
    location = origin + proxy_origin.with_ticket(parts.path, parts.query, ticket)
    return Plan(302, "", _redirect_headers(location))


def _plan_port(task_host: str | None, method: str, is_ws: bool, t: Target) -> Plan:
    """A `proxy_ports` service is served on the master's origin alone, sandboxed (a task's own
    origin is its notebook's; its name holds no port). A browser's session cookie may only
    read there: anything else is a script's or the tunnel's, with a bearer token."""
    if task_host is not None:
        return Plan(404, f"a task's origin serves its own service only: use /proxy/{t.task_id}:"
                    f"{t.port}/ on the master's address")  # fmt: skip
    if t.credential == "task_cookie":
        return Plan(401, "authentication required: a task's cookie counts on its origin alone")
    if t.credential == "cookie" and (is_ws or method not in ("GET", "HEAD")):
        return Plan(
            403,
            "the web UI's session may only read a task's proxy port: send a bearer token "
            "(`det` or `python -m determined.cli.tunnel --auth`)",
        )
    return _SANDBOXED


def _redirect_headers(location: str, cookie: str | None = None) -> tuple[tuple[bytes, bytes], ...]:
    out = [
        (b"location", location.encode("latin-1")),
        (b"cache-control", b"no-store"),
        (b"referrer-policy", b"no-referrer"),
        (b"content-length", b"0"),
    ]
    if cookie is not None:
        out.append((b"set-cookie", cookie.encode("latin-1")))
    return tuple(out)


async def trade_ticket(state: State, task_id: str, scheme: str, url: str) -> Plan | None:
    """On a task's origin, a URL with a ticket (None: it has none): the ticket, if good, for
    the task's cookie, and the browser sent on to the same URL without it."""
    parts = urlsplit(url)
    if proxy_origin.TICKET_PARAM not in parts.query:
        return None
    ticket, query = proxy_origin.without_ticket(parts.query)
    if not ticket:
        return None
    ctx = ctx_of(state)
    now = ctx.clock()
    async with ctx.sessionmaker() as session:
        user, visit, signed = await _signed_user(session, ticket, "ticket", task_id, now)
        task = (
            await session.execute(
                select(Task.owner_id, Task.task_type).where(Task.task_id == task_id)
            )
        ).first()
    if task is None or task.task_type not in INTERACTIVE_TYPES:
        raise NotFound(f"interactive task {task_id} not found")
    if not (user.admin or user.id == task.owner_id):
        raise PermissionDenied(f"only the owner of task {task_id} or an admin may reach it")
    book: proxy_origin.TicketBook = state["proxy_tickets"]
    if not book.take(signed.nonce, signed.expires, now.timestamp()):
        raise Unauthenticated("this link was used already: open the task again from the web UI")
    session_id, key, expires = visit
    value = proxy_origin.sign(
        "cookie", session_id, key, task_id, expires, secrets.token_urlsafe(12)
    )
    max_age = max(0, expires - int(now.timestamp()))
    cookie = (
        f"{proxy_origin.PROXY_COOKIE}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax"
        + ("; Secure" if scheme == "https" else "")
    )
    location = parts.path + (f"?{query}" if query else "")
    return Plan(302, "", _redirect_headers(location, cookie))
