"""The web UI's session: an HttpOnly `auth` cookie the master sets at login and clears at logout.

The UI asks for it by sending `X-Resolute-CSRF: 1` with its login (the header it sends with every
request). It then gets the cookie and `{user}`, never the token: no script can read the session,
so a page served from the UI's origin (a proxied notebook) cannot take it away. API clients
(`det`, the Determined client) send no such header and get `{token, user}` as before.

The cookie is SameSite=Strict, and Secure when the master serves TLS or the request came over
https. Writes it authenticates must pass `controlplane.domain.csrf.decide_csrf`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from litestar import Request, Response
from litestar.datastructures import Cookie

from controlplane.api.schemas.users import LoginResponse, MeResponse
from controlplane.domain.csrf import CSRF_HEADER, CSRF_VALUE, CsrfEvidence, decide_csrf
from controlplane.domain.errors import PermissionDenied

SESSION_COOKIE = "auth"  # Determined's name; the proxy reads it too (api/proxy.py)


def csrf_evidence(request: Request) -> CsrfEvidence:
    h = request.headers
    return CsrfEvidence(
        method=request.method,
        scheme=request.url.scheme,
        host=h.get("host"),
        origin=h.get("origin"),
        sec_fetch_site=h.get("sec-fetch-site"),
        referer=h.get("referer"),
        csrf_header=h.get(CSRF_HEADER),
    )


def require_same_origin(request: Request) -> None:
    """Raises PermissionDenied (403) unless the request passes the CSRF rules."""
    decision = decide_csrf(csrf_evidence(request))
    if not decision.allowed:
        raise PermissionDenied(decision.reason)


def wants_cookie(request: Request) -> bool:
    """The web UI's login: it sends the CSRF header, the real client never does."""
    return (request.headers.get(CSRF_HEADER) or "").strip() == CSRF_VALUE


def is_secure(request: Request, *, tls: bool) -> bool:
    """Secure when the master serves TLS or the request came over https (a front end's)."""
    return tls or request.url.scheme == "https"


def session_cookie(value: str, *, max_age: int, secure: bool) -> Cookie:
    return Cookie(
        key=SESSION_COOKIE,
        value=value,
        path="/",
        max_age=max_age,
        httponly=True,
        samesite="strict",
        secure=secure,
    )


def login_reply(
    request: Request, reply: LoginResponse, *, lifetime: timedelta, tls: bool
) -> Response[Any]:
    """`{token, user}` for API clients; for the UI the cookie and `{user}` (after the CSRF
    rules, so no other page can log the browser in as someone else)."""
    if not wants_cookie(request):
        return Response(reply)
    require_same_origin(request)
    cookie = session_cookie(
        reply.token,
        max_age=int(lifetime.total_seconds()),
        secure=is_secure(request, tls=tls),
    )
    body = MeResponse(user=reply.user)
    return Response(body, cookies=[cookie])


def clear_cookie(request: Request, *, tls: bool) -> Cookie:
    """The Set-Cookie that ends the UI's session in the browser (Max-Age=0)."""
    return session_cookie("", max_age=0, secure=is_secure(request, tls=tls))


def cookie_token(request: Request) -> str | None:
    return request.cookies.get(SESSION_COOKIE) or None
