"""Benchmark: logins under 100 parallel password guessers (issue 38, docs/security.md).

The target: the guessers slow other users' logins by at most 10 % (p50 and p95).

Set-up, all on loopback: the real master (`python -m controlplane`, SQLite in a temp data dir
unless --postgres) with its default login throttle, and 5 ordinary users created through the
API. Each client binds its own source address, so the master sees one address per client:

- legitimate users: 127.0.1.1-5, each logging in the way the `det` client does (salted hash,
  isHashed) with its right password, then pausing `--pause` seconds, over and over;
- guessers: 127.0.0.10 onwards, one connection each, sending wrong passwords back to back with
  no pause, ignoring Retry-After (the worst case for the master): a third of the guesses at
  `admin`, the rest sprayed over names that do not exist, fresh per guess.

Phases: legitimate users alone (`--seconds`, at most 20); then the guessers start: "burst" lasts
until every guesser address has been refused once (each address's free attempts are checked
with scrypt, as any login is; at most `--burst-limit` seconds); "settle" (`--settle`) lets the
addresses' delays double; then `--seconds` split into 4 pairs of windows, guessers on
("steady") and guessers paused ("paused", their addresses still throttled), each after 2
unmeasured seconds for the requests in flight at the switch. Steady is compared with paused:
the windows interleave, so load that drifts on a shared machine shifts both sides alike.
Latency is measured at the client, per login; percentiles are nearest-rank. The throttle's own
cost is timed in this process: one admission decision on a store already holding `max_tracked`
names and addresses.

Run: ``python benchmarks/run.py --only login`` or ``python -m benchmarks.login_throttle``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` and `controlplane` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from benchmarks import pg
from benchmarks.servers import CLIENT_SALT, PASSWORD, Server, base_url, free_port, login
from controlplane.services.login_throttle import LoginThrottle

TARGET_SLOWDOWN = 0.10
CYCLES = 4  # steady/paused window pairs the measured time is split into
SWITCH_S = 2.0  # unmeasured time after each switch between steady and paused
LEGIT_PASSWORD = "Legit-Passw0rd!"


def hashed(password: str) -> str:
    import hashlib

    return hashlib.sha512((CLIENT_SALT + password).encode()).hexdigest()


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest rank; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    legit_ms: list[float] = field(default_factory=list)
    legit_failed: int = 0  # anything but 200
    guesses: Counter[int] = field(default_factory=Counter)  # status → count
    refused_ms: list[float] = field(default_factory=list)  # 429 round trips

    def row(self, baseline: Phase | None) -> list[str]:
        p50, p95 = percentile(self.legit_ms, 50), percentile(self.legit_ms, 95)
        total = sum(self.guesses.values())
        share = f"{self.guesses[429] / total:.1%}" if total else "-"
        slow = "-"
        if baseline is not None and baseline.legit_ms:
            base50, base95 = percentile(baseline.legit_ms, 50), percentile(baseline.legit_ms, 95)
            slow = f"{p50 / base50 - 1:+.1%} / {p95 / base95 - 1:+.1%}"
        return [
            self.name,
            f"{self.seconds:.1f}",
            f"{len(self.legit_ms)}",
            f"{self.legit_failed}",
            f"{p50:.1f}",
            f"{p95:.1f}",
            slow,
            f"{total}",
            f"{total / self.seconds:.0f}" if self.seconds else "-",
            share,
            f"{self.guesses[403]}",
            f"{percentile(self.refused_ms, 50):.2f}" if self.refused_ms else "-",
        ]


@dataclass
class Result:
    guessers: int
    users: int
    database: str
    cpus: int | None
    phases: list[Phase] = field(default_factory=list)
    decide_us: float = math.nan  # one admission decision on a full store, in this process
    store_keys: int = 0

    def as_json(self) -> dict[str, Any]:
        def phase(p: Phase) -> dict[str, Any]:
            return {
                "name": p.name,
                "seconds": p.seconds,
                "logins": len(p.legit_ms),
                "failed": p.legit_failed,
                "p50_ms": percentile(p.legit_ms, 50),
                "p95_ms": percentile(p.legit_ms, 95),
                "guesses": {str(k): v for k, v in sorted(p.guesses.items())},
                "refused_p50_ms": percentile(p.refused_ms, 50),
            }

        p50, p95 = self.slowdown()
        return {
            "guessers": self.guessers,
            "users": self.users,
            "database": self.database,
            "cpus": self.cpus,
            "phases": [phase(p) for p in self.phases],
            "slowdown_p50": p50,
            "slowdown_p95": p95,
            "decide_us": self.decide_us,
            "store_keys": self.store_keys,
        }

    def phase(self, name: str) -> Phase:
        return next(p for p in self.phases if p.name == name)

    def baseline(self) -> Phase:
        """The paused windows, interleaved with the steady ones."""
        return self.phase("paused")

    def slowdown(self) -> tuple[float, float]:
        base, steady = self.baseline(), self.phase("steady")
        return (
            percentile(steady.legit_ms, 50) / percentile(base.legit_ms, 50) - 1,
            percentile(steady.legit_ms, 95) / percentile(base.legit_ms, 95) - 1,
        )

    def missed(self) -> list[str]:
        misses = []
        p50, p95 = self.slowdown()
        if not (p50 <= TARGET_SLOWDOWN and p95 <= TARGET_SLOWDOWN):
            misses.append(f"legitimate logins slowed {p50:+.1%} (p50) / {p95:+.1%} (p95) > 10 %")
        if any(p.legit_failed for p in self.phases):
            misses.append("a legitimate login failed")
        return misses

    def table(self) -> tuple[str, list[str], list[list[str]], list[str]]:
        base = self.baseline()
        rows = [p.row(None if p is base else base) for p in self.phases]
        header = ["phase", "s", "logins", "failed", "p50 ms", "p95 ms", "slower p50/p95",
                  "guesses", "guesses/s", "429 share", "checked (403)", "429 p50 ms"]  # fmt: skip
        title = (
            f"Logins of {self.users} users under {self.guessers} guessers "
            f"({self.database}, {self.cpus} CPUs)"
        )
        notes = [
            f"throttle decision: {self.decide_us:.2f} µs per login attempt "
            f"(store holding {self.store_keys:,} names and {self.store_keys:,} addresses)",
            f"slower: against the paused windows ({CYCLES} steady/paused pairs, interleaved); "
            "target: steady at most 10 % slower",
        ]
        return title, header, rows, notes


def decision_cost_us(keys: int, samples: int = 50_000) -> float:
    """One admit() on a store already full: the work a refused guess costs the master."""
    throttle = LoginThrottle(max_keys=keys)
    for i in range(keys):
        throttle.admit(f"user{i}", f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}", 0.0)
    names = [f"user{i % keys}" for i in range(samples)]
    t0 = time.perf_counter()
    for i, name in enumerate(names):
        throttle.admit(name, "192.0.2.1", 1.0 + i)
    return (time.perf_counter() - t0) / samples * 1e6


class Bench:
    def __init__(self, url: str, *, users: int, pause_s: float) -> None:
        self.url = url
        self.users = users
        self.pause_s = pause_s
        self.phase = Phase("setup")

    def client(self, source: str) -> httpx.AsyncClient:
        transport = httpx.AsyncHTTPTransport(local_address=source)
        return httpx.AsyncClient(base_url=self.url, transport=transport, timeout=120)

    async def create_users(self) -> None:
        token = await login(self.url)
        async with httpx.AsyncClient(base_url=self.url, timeout=60) as c:
            for i in range(self.users):
                r = await c.post(
                    "/api/v1/users",
                    headers={"Authorization": f"Bearer {token}"},
                    json={
                        "user": {"username": f"legit{i}", "active": True},
                        "password": hashed(LEGIT_PASSWORD),
                        "isHashed": True,
                    },
                )
                r.raise_for_status()

    async def legit(self, i: int, stop: asyncio.Event) -> None:
        body = {"username": f"legit{i}", "password": hashed(LEGIT_PASSWORD), "isHashed": True}
        async with self.client(f"127.0.1.{i + 1}") as c:
            while not stop.is_set():
                t0 = time.perf_counter()
                r = await c.post("/api/v1/auth/login", json=body)
                ms = (time.perf_counter() - t0) * 1000
                if r.status_code == 200:
                    self.phase.legit_ms.append(ms)
                else:
                    self.phase.legit_failed += 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.pause_s)

    async def measure(self, phase: Phase, seconds: float) -> Phase:
        """Users' logins for `seconds` go into `phase` (which may already hold some)."""
        self.phase = phase
        t0 = time.perf_counter()
        await asyncio.sleep(seconds)
        phase.seconds += time.perf_counter() - t0
        return phase


async def run(
    *,
    guessers: int = 100,
    users: int = 5,
    seconds: float = 20.0,
    settle_s: float = 60.0,
    pause_s: float = 0.2,
    burst_limit_s: float = 900.0,
    use_postgres: bool = False,
    store_keys: int = 50_000,
    master_env: dict[str, str] | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> Result:
    """`master_env`: extra DET_* settings for the master (tests shrink the throttle with it)."""
    workdir = Path(tempfile.mkdtemp(prefix="resolute-login-bench-"))
    result = Result(guessers, users, "SQLite", os.cpu_count())
    try:
        async with pg.databases() as dbs:
            env = dict(
                os.environ, DET_SECURITY_INITIAL_USER_PASSWORD=PASSWORD, PYTHONUNBUFFERED="1"
            )
            env.update(master_env or {})
            if use_postgres:
                env["DET_DB_URL"] = pg.sqlalchemy_url(await dbs.create("login"))
                result.database = f"PostgreSQL {await pg.server_version()}"
            port = free_port()
            server = Server(
                name="resolute master",
                argv=[
                    sys.executable,
                    "-m",
                    "controlplane",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--data-dir",
                    str(workdir / "data"),
                ],
                env=env,
                log_path=workdir / "master.log",
                ready_url=f"http://127.0.0.1:{port}/info",
            )
            server.start()
            try:
                await server.wait_ready()
                await _phases(Bench(base_url(server), users=users, pause_s=pause_s), result,
                              guessers=guessers, seconds=seconds, settle_s=settle_s,
                              burst_limit_s=burst_limit_s, say=say)  # fmt: skip
            finally:
                server.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    say("timing the throttle's decision in this process …")
    result.store_keys = store_keys
    result.decide_us = decision_cost_us(store_keys)
    return result


PHASES = ("alone", "burst", "settle", "steady", "paused")
ALONE, BURST, SETTLE, STEADY, PAUSED = range(len(PHASES))


async def _phases(
    bench: Bench,
    result: Result,
    *,
    guessers: int,
    seconds: float,
    settle_s: float,
    burst_limit_s: float,
    say: Callable[[str], None],
) -> None:
    """alone, burst, settle, then CYCLES pairs of steady and paused windows. Steady windows
    (guessers on) alternate with paused ones (guessers idle, their addresses still throttled),
    so load that drifts on the machine during the run shifts both sides alike; the paused
    windows are the baseline. The guessers run in a process of their own, so their client work
    does not delay the users' clocks."""
    await bench.create_users()
    ctx = multiprocessing.get_context("spawn")
    phase_no, refused, stop = ctx.Value("i", -1), ctx.Value("i", 0), ctx.Event()
    out = ctx.Queue()
    proc = ctx.Process(
        target=guess_process, args=(bench.url, guessers, phase_no, refused, stop, out)
    )
    proc.start()  # its interpreter starts while the users warm up
    phases = [Phase(name) for name in PHASES]
    stop_legit = asyncio.Event()
    legit = [asyncio.create_task(bench.legit(i, stop_legit)) for i in range(bench.users)]
    try:
        await asyncio.sleep(min(3.0, seconds / 2))  # warm: connections, caches
        say(f"legitimate users alone for {min(seconds, 20):.0f} s …")
        await bench.measure(phases[ALONE], min(seconds, 20))
        say(f"{guessers} guessers start; burst until every guesser address is refused …")
        bench.phase = phases[BURST]
        phase_no.value = BURST
        t0 = time.perf_counter()
        while refused.value < guessers and time.perf_counter() - t0 < burst_limit_s:
            await asyncio.sleep(0.05)
        phases[BURST].seconds = time.perf_counter() - t0
        if refused.value < guessers:
            say(f"  only {refused.value} of {guessers} addresses refused after {burst_limit_s} s")
        say(f"settling for {settle_s:.0f} s (the addresses' delays double) …")
        phase_no.value = SETTLE
        await bench.measure(phases[SETTLE], settle_s)
        window = seconds / CYCLES
        say(f"{CYCLES} times ({window:.0f} s guessing, {window:.0f} s paused) …")
        for _ in range(CYCLES):
            for no in (STEADY, PAUSED):
                phase_no.value = no
                # Unmeasured: the requests in flight at the switch (held 429s, queued checks)
                # belong to neither window.
                await bench.measure(Phase("switch"), SWITCH_S)
                await bench.measure(phases[no], window)
        stop.set()
        counts = await asyncio.to_thread(out.get, True, 120)
    finally:
        stop.set()
        stop_legit.set()
        await asyncio.gather(*legit)
        await asyncio.to_thread(proc.join, 30)
        if proc.is_alive():
            proc.kill()
    for no, phase in enumerate(phases):
        statuses, refused_ms = counts.get(no, ({}, []))
        phase.guesses.update(statuses)
        phase.refused_ms = refused_ms
    result.phases = phases


def guess_process(
    url: str, guessers: int, phase_no: Any, refused: Any, stop: Any, out: Any
) -> None:
    """The guessers' process: `guessers` connections, each from its own loopback address."""
    counts = asyncio.run(_guess_all(url, guessers, phase_no, refused, stop))
    out.put(counts)


async def _guess_all(
    url: str, guessers: int, phase_no: Any, refused: Any, stop: Any
) -> dict[int, tuple[dict[int, int], list[float]]]:
    statuses: dict[int, Counter[int]] = defaultdict(Counter)
    refused_ms: dict[int, list[float]] = defaultdict(list)
    throttled: set[int] = set()
    done = asyncio.Event()

    async def watch() -> None:
        while not stop.is_set():
            await asyncio.sleep(0.05)
        done.set()

    async def guesser(i: int) -> None:
        transport = httpx.AsyncHTTPTransport(local_address=f"127.0.{10 + i // 200}.{10 + i % 200}")
        names = itertools.count()
        async with httpx.AsyncClient(base_url=url, transport=transport, timeout=120) as c:
            while not done.is_set():
                if phase_no.value in (-1, ALONE, PAUSED):
                    await asyncio.sleep(0.02)
                    continue
                n = next(names)
                user = "admin" if n % 3 == 0 else f"ghost-{i}-{n}"
                body = {"username": user, "password": hashed(f"guess-{i}-{n}"), "isHashed": True}
                t0 = time.perf_counter()
                try:
                    r = await c.post("/api/v1/auth/login", json=body)
                except httpx.HTTPError:
                    statuses[phase_no.value][0] += 1
                    continue
                phase = phase_no.value
                statuses[phase][r.status_code] += 1
                if r.status_code == 429:
                    refused_ms[phase].append((time.perf_counter() - t0) * 1000)
                    if user != "admin" and i not in throttled:  # the address itself: throttled
                        throttled.add(i)
                        with refused.get_lock():
                            refused.value += 1

    await asyncio.gather(watch(), *(guesser(i) for i in range(guessers)))
    return {phase: (dict(statuses[phase]), refused_ms[phase]) for phase in statuses}


def print_table(result: Result) -> None:
    title, header, rows, notes = result.table()
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(title)
    print("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    for note in notes:
        print(f"  {note}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.login_throttle")
    p.add_argument("--quick", action="store_true", help="20 guessers, 5 s phases (CI smoke)")
    p.add_argument("--guessers", type=int, default=100, help="parallel guessers (100)")
    p.add_argument("--users", type=int, default=5, help="legitimate users (5)")
    p.add_argument("--seconds", type=float, default=20.0, help="each measured phase (20)")
    p.add_argument("--settle", type=float, default=60.0,
                   help="guessing before the steady phase is measured (60)")  # fmt: skip
    p.add_argument("--burst-limit", type=float, default=900.0,
                   help="longest wait for every guesser address to be refused (900)")  # fmt: skip
    p.add_argument("--pause", type=float, default=0.2, help="a user's pause between logins")
    p.add_argument("--postgres", action="store_true", help="PostgreSQL instead of SQLite")
    p.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = p.parse_args(argv)
    if args.quick:
        args.guessers, args.seconds = min(args.guessers, 20), min(args.seconds, 5.0)
        args.settle, args.burst_limit = min(args.settle, 5.0), min(args.burst_limit, 120.0)
    result = asyncio.run(
        run(
            guessers=args.guessers,
            users=args.users,
            seconds=args.seconds,
            settle_s=args.settle,
            burst_limit_s=args.burst_limit,
            pause_s=args.pause,
            use_postgres=args.postgres,
            store_keys=5_000 if args.quick else 50_000,
            say=lambda text: print(text, file=sys.stderr, flush=True),
        )
    )
    print_table(result)
    misses = result.missed()
    print("Targets: all met." if not misses else "Targets missed:\n  " + "\n  ".join(misses))
    if args.json:
        args.json.write_text(json.dumps(result.as_json(), indent=2))
    return len(misses)


if __name__ == "__main__":
    sys.exit(main())
