"""Benchmark: the cost of the RBAC permission check per request (issue 38; target <= 0.2 ms
at 1,000 users, 100 groups and 1,000 role assignments).

Set-up: a database of its own (SQLite in a temp dir; PostgreSQL too when one answers on
127.0.0.1:5432, or with --pg-url) migrated to head, with 1,000 users, 100 groups of 10-20
members (each user in one or two groups), 20 workspaces with 5 projects each, and 1,000 role
assignments (700 to users, 300 to groups; a tenth cluster-wide).

What the request path does with RBAC on (api/access.py `authorize_rbac`), timed one part at a
time for users drawn at random, each figure the per-call median and p95 over `--calls` calls:

- decide: the pure `rbac.decide` over the user's assignments;
- held (cached): the per-process cache lookup of what the user holds + decide: every request
  after the first of a user, until an assignment or membership changes;
- held (cold): the one-statement query of the user's own and groups' assignments + decide: the
  first request of a user after a change;
- scope: where the object a path names lives (a project -> its workspace): one primary-key
  read, paid only by routes naming an object;
- workspaces a list shows: the set of workspaces where the user holds a list's view
  permission (pure), computed once by each list request and used in its query.

Run: ``python benchmarks/rbac_check.py`` (``--calls N``, ``--pg-url URL``, ``--no-pg``).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert

from controlplane.db.models import (
    GroupMember,
    Project,
    RoleAssignment,
    User,
    UserGroup,
    Workspace,
)
from controlplane.db.session import make_engine, make_sessionmaker, upgrade
from controlplane.domain import rbac
from controlplane.services import rbac as service
from controlplane.services import rbac_scopes

USERS, GROUPS, WORKSPACES, ASSIGNMENTS = 1000, 100, 20, 1000
TARGET_MS = 0.2


async def populate(url: str, rng: random.Random) -> None:
    await upgrade(url)
    engine = make_engine(url)
    now = datetime.now(UTC)
    async with engine.begin() as conn:
        await conn.execute(
            insert(User),
            [
                {"id": 1000 + i, "username": f"bench-{i}", "password_hash": "", "admin": False,
                 "active": True, "created_at": now, "modified_at": now}
                for i in range(USERS)
            ],
        )  # fmt: skip
        await conn.execute(
            insert(Workspace),
            [
                {"id": 1000 + w, "name": f"bench-ws-{w}", "user_id": 1000, "immutable": False,
                 "archived": False, "created_at": now}
                for w in range(WORKSPACES)
            ],
        )  # fmt: skip
        await conn.execute(
            insert(Project),
            [
                {"id": 1000 + p, "name": f"p{p}", "workspace_id": 1000 + p % WORKSPACES,
                 "user_id": 1000, "archived": False, "immutable": False, "created_at": now,
                 "description": "", "key": f"BP{p}"}
                for p in range(WORKSPACES * 5)
            ],
        )  # fmt: skip
        await conn.execute(
            insert(UserGroup),
            [{"id": 1000 + g, "name": f"bench-g{g}", "created_at": now} for g in range(GROUPS)],
        )
        members = {(1000 + u % GROUPS, 1000 + u) for u in range(USERS)}
        members |= {(1000 + rng.randrange(GROUPS), 1000 + u) for u in range(0, USERS, 2)}
        await conn.execute(
            insert(GroupMember), [{"group_id": g, "user_id": u} for g, u in sorted(members)]
        )
        roles = [2, 4, 5, 7]
        rows = []
        for i in range(ASSIGNMENTS):
            cluster = i % 10 == 0
            role = rng.choice([1, 3, *roles]) if cluster else rng.choice(roles)
            ws = None if cluster else 1000 + rng.randrange(WORKSPACES)
            holder = (
                {"user_id": 1000 + rng.randrange(USERS), "group_id": None}
                if i < 700
                else {"user_id": None, "group_id": 1000 + rng.randrange(GROUPS)}
            )
            rows.append({"role_id": role, "workspace_id": ws, **holder})
        await conn.execute(insert(RoleAssignment), rows)
    await engine.dispose()


async def timed(calls: int, one: Callable[[int], Awaitable[object]]) -> tuple[float, float]:
    samples = []
    for i in range(calls):
        start = time.perf_counter()
        await one(i)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


async def measure(url: str, calls: int, rng: random.Random) -> dict[str, tuple[float, float]]:
    engine = make_engine(url)
    maker = make_sessionmaker(engine)
    users = [1000 + rng.randrange(USERS) for _ in range(calls)]
    perm = rbac.Permission.UPDATE_EXPERIMENT
    out: dict[str, tuple[float, float]] = {}
    async with maker() as db:
        held = {u: await service.held_by(db, u) for u in set(users)}
        sizes = [len(h) for h in held.values()]

        async def decide(i: int) -> object:
            return rbac.decide(held[users[i]], perm, 1000 + i % WORKSPACES)

        cache = service.HeldCache()
        for u in set(users):
            await service.held_by(db, u, cache)

        async def cached(i: int) -> object:
            h = await service.held_by(db, users[i], cache)
            return rbac.decide(h, perm, 1000 + i % WORKSPACES)

        async def cold(i: int) -> object:
            h = await service.held_by(db, users[i])
            return rbac.decide(h, perm, 1000 + i % WORKSPACES)

        async def listed(i: int) -> object:
            return rbac.workspaces_granting(held[users[i]], perm)

        async def scope(i: int) -> object:
            return await rbac_scopes.workspace_of(db, "project", 1000 + i % (WORKSPACES * 5))

        parts = {
            "decide": decide,
            "held (cached) + decide": cached,
            "held (cold) + decide": cold,
            "scope of a project": scope,
            "workspaces a list shows": listed,
        }
        for name, fn in parts.items():
            await timed(min(200, calls), fn)  # warm up
            out[name] = await timed(calls, fn)
    await engine.dispose()
    out["_sizes"] = (statistics.mean(sizes), max(sizes))
    return out


async def pg_url(given: str | None) -> str | None:
    """The given URL, else a fresh database on 127.0.0.1:5432 when one answers."""
    if given:
        return given
    import asyncpg

    try:
        conn = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres", timeout=3)
    except (OSError, asyncpg.PostgresError):
        return None
    name = f"bench_rbac_{random.randrange(10**9)}"
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    return f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"


async def drop_pg(url: str) -> None:
    import asyncpg

    name = url.rsplit("/", 1)[1]
    conn = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres")
    await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await conn.close()


async def amain(args: argparse.Namespace) -> int:
    rng = random.Random(38)
    results: dict[str, dict[str, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        await populate(url, rng)
        results["SQLite"] = await measure(url, args.calls, rng)
    if not args.no_pg and (url := await pg_url(args.pg_url)) is not None:
        try:
            await populate(url, rng)
            results["PostgreSQL"] = await measure(url, args.calls, rng)
        finally:
            if not args.pg_url:
                await drop_pg(url)
    print(
        f"RBAC permission check: {USERS} users, {GROUPS} groups, {ASSIGNMENTS} role "
        f"assignments, {args.calls} calls each (target <= {TARGET_MS} ms per request)"
    )
    print(f"{'database':<11} {'part':<24} {'median ms':>10} {'p95 ms':>9}  target")
    for db, parts in results.items():
        mean, most = parts.pop("_sizes")
        for part, (p50, p95) in parts.items():
            mark = "" if part.startswith("scope") or part.startswith("held (cold)") else (
                "ok" if p95 <= TARGET_MS else "OVER")  # fmt: skip
            print(f"{db:<11} {part:<24} {p50:>10.4f} {p95:>9.4f}  {mark}")
        print(f"{db:<11} assignments held per user: mean {mean:.1f}, max {most}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=5000)
    p.add_argument("--pg-url", default=None)
    p.add_argument("--no-pg", action="store_true")
    return asyncio.run(amain(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
