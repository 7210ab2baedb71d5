"""Each way a PostgreSQL database can be unavailable, provoked on a real server: the API answers
503 with Retry-After while it lasts and 2xx after, and the master logs one line when the
database goes and one when it is back (issue 38: a database that refused connections gave 500s,
about 1,440 log lines a second and a crashed trial).

Each test has a database (and, where a limit needs one, a login role) of its own on the shared
server: `ALTER DATABASE … ALLOW_CONNECTIONS false` with its backends terminated (55000 on
connect, 57P01 for the killed sessions), a role's connection limit (53300; superusers are exempt,
so the master connects as the test's role), a port that stops listening (a loopback TCP relay
in front of the server: connections reset, then refused), and a pool with no free connection
(pool_size 1, held by the test).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import asyncpg
import pytest
from litestar import Litestar
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from controlplane.db.session import make_sessionmaker
from controlplane.services.db_outage import outage_watch
from controlplane.services.db_unavailable import Unavailability, classify
from tests.conftest import PASSWORD, PG_DSN, fresh_pg_database, make_settings
from tests.support.db_template import migrated
from tests.support.live_master import LiveMaster, live_master

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

DOWN = "the database is unavailable"
BACK = "the database is back"


@pytest.fixture
def pg(pg_skip_reason: str | None) -> None:
    if pg_skip_reason:
        pytest.skip(pg_skip_reason)


async def admin(*statements: str) -> None:
    conn = await asyncpg.connect(PG_DSN)
    try:
        for sql in statements:
            await conn.execute(sql)
    finally:
        await conn.close()


def terminate(db: str) -> str:
    return (
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE datname = '{db}' AND pid <> pg_backend_pid()"
    )


class Lines(logging.Handler):
    """Every record of the master's loggers (Litestar configures the root logger at start-up,
    so pytest's capture at the root is not relied on)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def caplog() -> Iterator[Lines]:  # type: ignore[override]
    lines = Lines()
    logger = logging.getLogger("controlplane")
    level = logger.level
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)


@dataclasses.dataclass
class Run:
    app: Litestar
    master: LiveMaster
    user: dict[str, str]
    db: str  # the database's name
    caplog: Lines

    async def answers(self, n: int = 5) -> list[tuple[int, str | None]]:
        out = []
        for _ in range(n):
            r = await self.master.http.get("/api/v1/experiments", headers=self.user)
            out.append((r.status_code, r.headers.get("retry-after")))
        return out

    def lines(self) -> list[logging.LogRecord]:
        return list(self.caplog.records)


@contextlib.asynccontextmanager
async def running(url: str, tmp_path: Path, caplog: Lines) -> AsyncIterator[Run]:
    async with live_master(make_settings(url, tmp_path), PASSWORD) as m:
        user = await m.login("determined", PASSWORD)
        caplog.records.clear()
        yield Run(m.app, m, user, url.rsplit("/", 1)[1].split("?")[0], caplog)


async def check_outage(
    run: Run, begin: Callable[[], Awaitable[None]], end: Callable[[], Awaitable[None]]
) -> None:
    """503 + Retry-After while it lasts, 200 after; one line down, one line back, nothing else
    at WARNING or above and no traceback."""
    assert await run.answers(1) == [(200, None)]
    await begin()
    during = await run.answers(5)
    assert during == [(503, "2")] * 5, during
    await end()
    assert await run.answers(2) == [(200, None)] * 2
    lines = run.lines()
    down = [r for r in lines if r.getMessage().startswith(DOWN)]
    back = [r for r in lines if r.getMessage().startswith(BACK)]
    loud = [r for r in lines if r.levelno >= logging.WARNING and r not in down]
    assert (len(down), len(back)) == (1, 1), [r.getMessage() for r in lines]
    assert loud == [] and not any(r.exc_info for r in lines), [r.getMessage() for r in loud]
    assert down[0].created <= back[0].created


async def test_a_database_that_refuses_connections(pg: None, tmp_path: Path, caplog: Lines) -> None:
    """The user's report: ALLOW_CONNECTIONS false and its backends terminated (55000, 57P01)."""
    async with fresh_pg_database() as url:
        await migrated(url)
        async with running(url, tmp_path, caplog) as run:
            db = run.db

            async def begin() -> None:
                await admin(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS false', terminate(db))

            async def end() -> None:
                await admin(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS true')

            await check_outage(run, begin, end)
            assert "not accepting connections" in next(
                r.getMessage() for r in run.lines() if r.getMessage().startswith(DOWN)
            )


async def test_a_killed_session_is_57P01_and_unavailable(pg: None) -> None:
    """The sessions terminated under a running statement get 57P01 (admin shutdown)."""
    async with fresh_pg_database() as url:
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
                await admin(terminate(url.rsplit("/", 1)[1]))
                with pytest.raises(Exception) as info:
                    await conn.execute(text("SELECT 1"))
            assert classify(info.value) in (
                Unavailability.SHUTTING_DOWN,
                Unavailability.CONNECTION_LOST,  # when the socket's end is read before the notice
            ), repr(info.value)
        finally:
            await engine.dispose()


@pytest.mark.parametrize("limit_on", ["role", "database"])
async def test_a_connection_limit_of_zero(
    pg: None, tmp_path: Path, caplog: Lines, limit_on: str
) -> None:
    """53300 too many connections (superusers are exempt: the master logs in as a role)."""
    role = f"resolute_outage_{uuid.uuid4().hex[:8]}"
    await admin(f'CREATE ROLE "{role}" LOGIN')
    try:
        async with fresh_pg_database() as url:
            await migrated(url)
            db = url.rsplit("/", 1)[1]
            grants = await asyncpg.connect(PG_DSN.rsplit("/", 1)[0] + f"/{db}")
            try:
                await grants.execute(
                    f'GRANT ALL ON SCHEMA public TO "{role}";'
                    f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}";'
                    f'GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO "{role}";'
                )
            finally:
                await grants.close()
            role_url = url.replace("://postgres@", f"://{role}@")
            target = f'ROLE "{role}"' if limit_on == "role" else f'DATABASE "{db}"'
            async with running(role_url, tmp_path, caplog) as run:

                async def begin() -> None:
                    await admin(f"ALTER {target} CONNECTION LIMIT 0", terminate(db))

                async def end() -> None:
                    await admin(f"ALTER {target} CONNECTION LIMIT -1")

                await check_outage(run, begin, end)
                assert "too many connections" in next(
                    r.getMessage() for r in run.lines() if r.getMessage().startswith(DOWN)
                )
    finally:
        await admin(f'DROP ROLE IF EXISTS "{role}"')


class Relay:
    """A loopback TCP relay to the PostgreSQL server, which can stop listening (refused) and cut
    the connections it carries (reset), then listen on the same port again."""

    def __init__(self) -> None:
        self.server: asyncio.Server | None = None
        self.port = 0
        self.writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in list(self.writers):
            writer.transport.abort()  # RST: the master's connections are reset
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", 5432)
        self.writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self.writers -= {writer, up_writer}


async def test_a_port_that_stops_listening(pg: None, tmp_path: Path, caplog: Lines) -> None:
    """Connection reset (the open ones), then refused (new ones), then the port is back."""
    relay = Relay()
    await relay.start()
    try:
        async with fresh_pg_database() as url:
            await migrated(url)
            relayed = url.replace("@127.0.0.1:5432/", f"@127.0.0.1:{relay.port}/")
            async with running(relayed, tmp_path, caplog) as run:
                await check_outage(run, relay.stop, relay.start)
                message = next(
                    r.getMessage() for r in run.lines() if r.getMessage().startswith(DOWN)
                )
                assert "connection refused" in message or "connection lost" in message, message
    finally:
        if relay.server is not None:
            relay.server.close()


async def test_a_pool_with_no_free_connection(pg: None, tmp_path: Path, caplog: Lines) -> None:
    """SQLAlchemy's pool timeout: pool_size 1, its connection held elsewhere."""
    async with fresh_pg_database() as url:
        await migrated(url)
        async with running(url, tmp_path, caplog) as run:
            small = create_async_engine(url, pool_size=1, max_overflow=0, pool_timeout=0.2)
            good = run.app.state["api"]
            run.app.state["api"] = dataclasses.replace(good, sessionmaker=make_sessionmaker(small))
            held: list[object] = []
            try:

                async def begin() -> None:
                    conn = await small.connect()
                    await conn.execute(text("SELECT 1"))
                    held.append(conn)

                async def end() -> None:
                    await held.pop().close()  # type: ignore[attr-defined]

                await check_outage(run, begin, end)
                assert outage_watch(small).down is False
            finally:
                run.app.state["api"] = good
                await small.dispose()


async def test_an_agent_that_dials_during_an_outage_is_told_to_try_again_later(
    pg: None, tmp_path: Path, caplog: Lines
) -> None:
    """The agents' socket's 503: close code 1013, one log line, no traceback."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    from agent.protocol import AGENTS_PATH

    async with fresh_pg_database() as url:
        await migrated(url)
        async with running(url, tmp_path, caplog) as run:
            await admin(f'ALTER DATABASE "{run.db}" ALLOW_CONNECTIONS false', terminate(run.db))
            query = "?id=agent-1&resource_pool=default&reconnect=false&version=t&hostname=h"
            async with connect(run.master.ws_url + AGENTS_PATH + query) as ws:
                with pytest.raises(ConnectionClosed) as info:
                    await ws.recv()
            assert info.value.rcvd is not None and info.value.rcvd.code == 1013
            await admin(f'ALTER DATABASE "{run.db}" ALLOW_CONNECTIONS true')
            messages = [r.getMessage() for r in run.lines() if r.levelno >= logging.WARNING]
            assert len(messages) == 1 and messages[0].startswith(DOWN), messages
            assert "agent agent-1's handshake" in messages[0]
            assert not any(r.exc_info for r in run.lines())
