"""The login throttle at the HTTP edge: who is asking (the client address) and the 429 answer.

Every route that checks a password asks `admit` first, before any hashing, so a refused guess
costs the master a dictionary lookup; an admitted one has its password checked in rank order
(services/password_checks.py). docs/security.md describes the behaviour.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
from collections.abc import Sequence
from datetime import datetime
from ipaddress import IPv4Network, IPv6Network

from litestar import Request, Response
from litestar.openapi import ResponseSpec

from controlplane.api.errors import error_response
from controlplane.api.schemas.common import ErrorBody
from controlplane.services.auth import Verifier, verify_password
from controlplane.services.login_throttle import LoginThrottle
from controlplane.services.password_checks import PasswordChecks

Network = IPv4Network | IPv6Network
MAX_ADDRESS = 64  # longer than any IPv6 text; a forged hop cannot make a long key
TOO_MANY = "too many failed logins; retry after {s} s"

# What the login route documents beyond the shared errors (api/errors.py).
RESPONSES = {
    429: ResponseSpec(
        data_container=ErrorBody,
        description="Too many failed logins; the Retry-After header says how many seconds to wait",
        generate_examples=False,
    )
}


class LoginGuard:
    # A plain class, not a dataclass: Litestar's signature model inspects dataclasses it meets
    # among dependencies (ApiContext holds this), and it cannot type a union of two classes.
    def __init__(
        self,
        throttle: LoginThrottle,
        trusted_proxies: Sequence[Network] = (),
        *,
        refusal_delay_s: float = 0.0,
        checks: PasswordChecks | None = None,
    ) -> None:
        self.throttle = throttle
        self.checks = checks or PasswordChecks()
        self.trusted_proxies = tuple(trusted_proxies)
        self.refusal_delay_s = refusal_delay_s

    async def admit(self, request: Request, username: str, now: datetime) -> Response | Verifier:
        """The 429 to send; or, with the attempt counted, how to check its password."""
        decision = self.throttle.admit(username, self.address(request), now.timestamp())
        if decision.allowed:
            return functools.partial(self.checks.run, decision.rank, verify_password)
        wait = decision.retry_after_s
        if self.refusal_delay_s > 0:
            # Held a moment (a sleeping coroutine, no CPU): a client that ignores Retry-After
            # and asks again at once gets at most one answer per this delay per connection,
            # so a hammering guesser cannot keep the master busy answering 429s.
            await asyncio.sleep(min(wait, self.refusal_delay_s))
        # gRPC code 8, RESOURCE_EXHAUSTED: what HTTP 429 maps to (as api/errors.py does).
        response = error_response(429, 8, TOO_MANY.format(s=wait))
        response.headers["Retry-After"] = str(wait)
        return response

    def succeeded(self, request: Request, username: str, now: datetime) -> None:
        self.throttle.succeeded(username, self.address(request), now.timestamp())

    def address(self, request: Request) -> str:
        peer = request.client.host if request.client else ""
        return client_address(peer, request.headers.get("x-forwarded-for"), self.trusted_proxies)


def client_address(peer: str, forwarded_for: str | None, trusted: Sequence[Network]) -> str:
    """The peer, unless it is a trusted proxy: then the nearest X-Forwarded-For hop that is not.

    Hops are read from the right: the ones a trusted proxy appended are true, anything left of
    the first untrusted hop may have been written by the client itself.
    """
    if not trusted or not forwarded_for or not _is_trusted(peer, trusted):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _is_trusted(hop, trusted):
            return hop[:MAX_ADDRESS]
    return hops[0][:MAX_ADDRESS] if hops else peer


def _is_trusted(address: str, trusted: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in trusted)
