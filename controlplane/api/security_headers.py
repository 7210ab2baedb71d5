"""The security headers of every response the master itself serves (never `/proxy/…`).

- The web UI (`/`, `/det/…`): a Content-Security-Policy fit for the built app (its scripts and
  styles are files under /det/assets; it makes requests only to its own origin), no framing, no
  MIME sniffing, and the Referer only to its own origin.
- The API and everything else: no MIME sniffing; login, logout and "who am I" are never cached.

Proxied responses are the proxy's business (api/proxy.py): it answers `/proxy/…` before the
app runs (app.py's `_Master`), so nothing here reaches them.
"""

from __future__ import annotations

from typing import Any

Headers = tuple[tuple[bytes, bytes], ...]

# The built index.html loads one module script and one stylesheet from /det/assets; Preact sets
# styles through the CSSOM, which style-src does not govern. No inline scripts: none are needed.
UI_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)
NOSNIFF = ((b"x-content-type-options", b"nosniff"),)
UI: Headers = (
    (b"content-security-policy", UI_CSP.encode()),
    (b"x-frame-options", b"DENY"),
    *NOSNIFF,
    (b"referrer-policy", b"same-origin"),
)
NO_STORE: Headers = ((b"cache-control", b"no-store"),)
# Responses that carry or reveal a session: login, logout, and who the caller is.
_AUTH_PREFIX = "/api/v1/auth/"
_WHO_AM_I = frozenset({"/api/v1/me", "/api/v1/users/me"})


def headers_for(path: str) -> Headers:
    """The headers a response to `path` gets (set, replacing any the handler set)."""
    if path == "/" or path == "/det" or path.startswith("/det/"):
        return UI
    if path.startswith(_AUTH_PREFIX) or path in _WHO_AM_I:
        return (*NOSNIFF, *NO_STORE)
    return NOSNIFF


def with_headers(scope: dict[str, Any], send: Any) -> Any:
    """`send`, adding `headers_for(path)` to the HTTP response's start message."""
    if scope.get("type") != "http":
        return send
    extra = headers_for(scope.get("path", ""))
    names = {name for name, _ in extra}

    async def send_with_headers(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
            message = {**message, "headers": [*kept, *extra]}
        await send(message)

    return send_with_headers
