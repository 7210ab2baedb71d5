"""Where proxied pages live, so that they cannot reach the web UI's session. Pure.

A task's pages are the task owner's code. Served on the UI's own origin, they could script the
UI (read its storage, call the API with the visitor's cookie, open `/det/` and drive it). So:

- **Task origins.** A browser signed in by the UI's cookie is sent from `/proxy/{task}/…` on the
  master's origin to the task's own origin, `{task id}.{proxy_domain}` (on the same port and
  scheme), with a one-time ticket (30 s, bound to the visitor's session and the task) that the
  task origin trades for an HttpOnly cookie valid for that task alone. The UI's cookie is
  host-only, so a task origin never sees it; the master serves nothing but that task's
  `/proxy/{task}/…` there. `proxy_domain` unset: a master addressed as localhost or a loopback
  address uses `localhost` (browsers resolve every `*.localhost` name to loopback themselves),
  any other gets no task origins (below).
- **The master's origin** still serves proxied requests that carry `Authorization: Bearer`
  (the CLIs, the Determined client, scripts) and a shell's WebSocket, and browsers where no
  task origin exists; every such response carries `Content-Security-Policy: sandbox …` without
  `allow-same-origin`, so a page rendered from it runs in an opaque origin (no storage, no
  cookies, no access to any window of the UI).
- Requests made with a task's cookie that come from another site's page (Fetch Metadata:
  `Sec-Fetch-Site` other than same-origin or none, or an `Origin` other than the task's) are
  refused, except plain top-level navigations: tasks' origins are sibling hosts, which browsers
  may treat as one site, and a page of one task must not make the visitor's browser act on
  another.
- The master's cookies never reach a task (`strip_cookies`), and a task may not set them or any
  cookie for a wider domain (`keep_set_cookie`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

from controlplane.api.session_cookie import SESSION_COOKIE

# The cookie a task origin sets for its visitor (HttpOnly, host-only, that task's alone).
PROXY_COOKIE = "resolute_proxy"
# Every cookie the master itself sets, in one place: stripped from what goes to a task, and a
# task's Set-Cookie of any of these names is dropped.
MASTER_COOKIES = frozenset({SESSION_COOKIE, PROXY_COOKIE})
# Credential headers of the master's API (a task's own allocation token, in Determined's
# names, and the UI's CSRF header), never passed on to a task.
MASTER_HEADERS = frozenset(
    {"authorization", "grpc-metadata-x-allocation-token", "x-allocation-token", "x-resolute-csrf"}
)
TICKET_PARAM = "resolute_proxy_ticket"
TICKET_TTL_S = 30
# A page served on the master's origin runs in an opaque origin: scripts and forms work, but it
# shares nothing with the UI (no allow-same-origin, no top navigation).
SANDBOX_CSP = (
    b"sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads "
    b"allow-pointer-lock allow-presentation"
)
# On a task origin: only that task's own pages may frame it.
TASK_CSP = b"frame-ancestors 'self'"
LOOPBACK_NAMES = frozenset({"localhost", "localhost."})


# --- cookies -----------------------------------------------------------------------------------


def strip_cookies(value: bytes) -> bytes | None:
    """A Cookie header without the master's cookies (None: nothing left). The task's own
    (Jupyter's `_xsrf`, `username-…`) pass as they were."""
    kept = []
    for part in value.split(b";"):
        name = part.split(b"=", 1)[0].strip()
        if name and name.decode("latin-1") not in MASTER_COOKIES:
            kept.append(part.strip())
    return b"; ".join(kept) if kept else None


def keep_set_cookie(value: bytes) -> bool:
    """Whether a task's Set-Cookie may reach the browser: not one of the master's names, and
    no Domain attribute (a cookie for `localhost` or the master's domain would reach the UI)."""
    first, *attributes = value.split(b";")
    name = first.split(b"=", 1)[0].strip().decode("latin-1")
    if not name or name in MASTER_COOKIES:
        return False
    return not any(a.split(b"=", 1)[0].strip().lower() == b"domain" for a in attributes)


def cookie_value(value: str, name: str) -> str | None:
    for part in value.split(";"):
        key, sep, val = part.strip().partition("=")
        if sep and key == name and val:
            return val
    return None


# --- origins -----------------------------------------------------------------------------------


def _split_host(host: str) -> tuple[str, str]:
    """(name, ":port" or "") of a Host header."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1], host[end + 1 :]
    name, sep, port = host.rpartition(":")
    if sep and port.isdigit():
        return name, ":" + port
    return host, ""


def _is_loopback(name: str) -> bool:
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def task_domain(configured: str | None, request_host: str) -> str | None:
    """The domain task origins live under for a request addressed to `request_host` (None:
    no task origins; serve on the master's origin, sandboxed)."""
    if configured:
        return configured.strip().lower().rstrip(".")
    name, _ = _split_host(request_host)
    return "localhost" if _is_loopback(name) else None


def task_of_host(host: str | None, configured: str | None) -> str | None:
    """The task whose origin `host` is (`{task id}.{domain}[:port]`), else None."""
    if not host:
        return None
    name, _ = _split_host(host)
    domain = (configured or "localhost").strip().lower().rstrip(".").split(":")[0]
    label, dot, rest = name.partition(".")
    if not dot or rest.rstrip(".") != domain or not label:
        return None
    return label


def task_origin(task_id: str, domain: str, scheme: str, request_host: str) -> str:
    """`scheme://{task}.{domain}[:port]`: the port is the domain's own if it names one, else the
    one the visitor used for the master."""
    name, port = _split_host(domain)
    if not port:
        port = _split_host(request_host)[1]
    return f"{scheme}://{task_id}.{name}{port}"


def without_ticket(query: str) -> tuple[str | None, str]:
    """(the ticket, the query without it)."""
    ticket = None
    kept = []
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == TICKET_PARAM:
            ticket = value
        else:
            kept.append((key, value))
    return ticket, urlencode(kept)


def with_ticket(path: str, query: str, ticket: str) -> str:
    extra = urlencode({TICKET_PARAM: ticket})
    return f"{path}?{query}&{extra}" if query else f"{path}?{extra}"


# --- where a request comes from ----------------------------------------------------------------


def cross_site_refusal(
    method: str, is_ws: bool, origin: str | None, site: str | None, mode: str | None, own: str
) -> str | None:
    """Why a request carrying a task's cookie is refused (None: it may go on). `own` is the
    task's origin. Browsers send Sec-Fetch-Site and Origin on what pages make them do; tools
    send neither and pass."""
    if site in (None, "none", "same-origin") and (origin is None or origin.lower() == own.lower()):
        return None
    if mode == "navigate" and method in ("GET", "HEAD") and not is_ws:
        return None  # following a link: the page it opens is the task's own, in its own origin
    return f"a page of {origin or 'another site'} may not use this task's session"


# --- tickets and the task cookie ---------------------------------------------------------------
# Signed with the visitor's session (the SHA-256 of its token, which only the database holds):
# nothing to configure, the same in every worker, and a logout (the session's row deleted)
# ends every task cookie of that session.


@dataclass(frozen=True)
class Signed:
    kind: str
    session_id: int
    task_id: str
    expires: int  # unix seconds
    nonce: str


def _mac(key: str, body: str) -> str:
    digest = hmac.new(key.encode(), body.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def sign(kind: str, session_id: int, key: str, task_id: str, expires: int, nonce: str) -> str:
    body = f"{kind}.{session_id}.{task_id}.{expires}.{nonce}"
    return f"{body}.{_mac(key, body)}"


def read_signed(value: str, kind: str) -> Signed | None:
    """The parts of a ticket or cookie of `kind`, unverified (None: not one)."""
    parts = value.split(".")
    if len(parts) != 6 or parts[0] != kind or not parts[1].isdigit() or not parts[3].isdigit():
        return None
    if len(value) > 512:
        return None
    return Signed(kind, int(parts[1]), parts[2], int(parts[3]), parts[4])


def verify(value: str, signed: Signed, key: str, task_id: str, now: float) -> bool:
    """The signature holds for `key`, it names `task_id`, and it has not expired."""
    body, _, mac = value.rpartition(".")
    return (
        signed.task_id == task_id
        and now < signed.expires
        and hmac.compare_digest(mac.encode(), _mac(key, body).encode())
    )


class TicketBook:
    """Tickets already traded (until they expire): each is good once in this worker."""

    def __init__(self) -> None:
        self._used: dict[str, float] = {}

    def take(self, nonce: str, expires: float, now: float) -> bool:
        if len(self._used) > 10_000:
            self._used = {n: e for n, e in self._used.items() if e > now}
        if nonce in self._used:
            return False
        self._used[nonce] = expires
        return True
