"""A bounded closed-loop load generator: N clients, each sending one request after another."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx

# send(http, client, seq) sends one request; a 2xx answer counts as acknowledged.
Send = Callable[[httpx.AsyncClient, int, int], Awaitable[httpx.Response]]


@dataclass
class LoadResult:
    clients: int
    elapsed_s: float  # from the first send to the last answer (in-flight requests finish)
    acked: int = 0
    failed: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def requests_per_s(self) -> float:
        return self.acked / self.elapsed_s if self.elapsed_s else 0.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


async def closed_loop(
    base_url: str,
    clients: int,
    duration_s: float,
    send: Send,
    *,
    headers: dict[str, str] | None = None,
    request_timeout_s: float = 60.0,
) -> LoadResult:
    """Run `clients` loops for `duration_s`; no new request starts after the deadline."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, limits=limits, timeout=request_timeout_s
    ) as http:
        result = LoadResult(clients=clients, elapsed_s=0.0)
        start = time.perf_counter()
        deadline = start + duration_s

        async def one(client: int) -> None:
            seq = 0
            while time.perf_counter() < deadline:
                seq += 1
                t0 = time.perf_counter()
                try:
                    response = await send(http, client, seq)
                    ok = response.is_success
                    if not ok and len(result.errors) < 5:
                        result.errors.append(f"HTTP {response.status_code}: {response.text[:300]}")
                except httpx.HTTPError as exc:
                    ok = False
                    if len(result.errors) < 5:
                        result.errors.append(f"{type(exc).__name__}: {exc}")
                if ok:
                    result.acked += 1
                    result.latencies_ms.append((time.perf_counter() - t0) * 1000)
                else:
                    result.failed += 1
                    if result.failed > 50 and result.acked == 0:
                        return  # the server rejects everything: stop early, report it

        await asyncio.gather(*(one(i) for i in range(clients)))
        result.elapsed_s = time.perf_counter() - start
        return result
