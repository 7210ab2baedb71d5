"""Whether a request authenticated by the web UI's `auth` cookie may change anything.

Pure. A browser attaches the cookie to requests other pages make, so a cookie alone proves
nothing about who wrote a write. A write (anything but GET, HEAD, OPTIONS) made with the cookie
must show both:

- the custom header `X-Resolute-CSRF: 1`. Only the UI sends it, and a page of another origin
  cannot add it without a CORS preflight, which the master never grants;
- that it comes from the master's own origin: its `Origin` header, else `Sec-Fetch-Site:
  same-origin`, else its `Referer`'s origin. `Origin: null` (a sandboxed or opaque page, such as
  a proxied page under the proxy's CSP sandbox) is never the master's.

Requests with `Authorization: Bearer` (the CLI, the Determined client, agents, the harness) never
come here: a header a page cannot set cannot be forged by another page.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

CSRF_HEADER = "X-Resolute-CSRF"
CSRF_VALUE = "1"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_DEFAULT_PORTS = {"http": "80", "https": "443"}


@dataclass(frozen=True)
class CsrfEvidence:
    """What a request says about where it comes from (header values as sent, or None)."""

    method: str
    scheme: str  # the request's own scheme, as the master sees it (http or https)
    host: str | None  # the Host header: the authority the browser addressed
    origin: str | None = None
    sec_fetch_site: str | None = None
    referer: str | None = None
    csrf_header: str | None = None


@dataclass(frozen=True)
class CsrfDecision:
    allowed: bool
    reason: str = ""  # why not, in words a user can act on


def _authority(scheme: str, netloc: str) -> str:
    """`host[:port]` lowercased, without the scheme's default port (browsers omit it)."""
    netloc = netloc.strip().lower()
    default = _DEFAULT_PORTS.get(scheme)
    if default and netloc.endswith(":" + default):
        netloc = netloc[: -len(default) - 1]
    return netloc


def _same_origin(url: str, scheme: str, host: str) -> bool:
    """`url`'s origin is the master's: same authority, and the same scheme or https (a
    TLS-terminating front end serves the UI over https while the master sees http)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    their = parts.scheme.lower()
    if their not in _DEFAULT_PORTS or not parts.netloc:
        return False
    if their != scheme and their != "https":
        return False
    return _authority(their, parts.netloc) == _authority(scheme, host)


def _refused(reason: str) -> CsrfDecision:
    return CsrfDecision(False, f"refused a cookie-authenticated write: {reason}")


def decide_csrf(e: CsrfEvidence) -> CsrfDecision:
    """Allow or refuse a request authenticated by the `auth` cookie (never a bearer one)."""
    if e.method.upper() in SAFE_METHODS:
        return CsrfDecision(True)
    if (e.csrf_header or "").strip() != CSRF_VALUE:
        return _refused(
            f"the header {CSRF_HEADER}: {CSRF_VALUE} is missing (the web UI sends it; API "
            "clients authenticate with Authorization: Bearer instead of the cookie)"
        )
    if not e.host:
        return _refused("the request names no Host")
    scheme = e.scheme.lower()
    if e.origin is not None:
        if e.origin.strip().lower() == "null":
            return _refused("it comes from an opaque origin (Origin: null)")
        if not _same_origin(e.origin, scheme, e.host):
            return _refused(f"its Origin {e.origin[:100]!r} is not this master's")
        return CsrfDecision(True)
    if e.sec_fetch_site is not None:
        if e.sec_fetch_site.strip().lower() != "same-origin":
            return _refused(f"Sec-Fetch-Site is {e.sec_fetch_site[:40]!r}, not same-origin")
        return CsrfDecision(True)
    if e.referer is not None:
        if not _same_origin(e.referer, scheme, e.host):
            return _refused("its Referer is not a page of this master")
        return CsrfDecision(True)
    return _refused("it names no Origin, Sec-Fetch-Site or Referer")
