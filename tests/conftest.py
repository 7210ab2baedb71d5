"""Shared fixtures: a master per test on SQLite and on PostgreSQL, plus logged-in clients."""

from __future__ import annotations

import asyncio
import fcntl
import os
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from controlplane.app import create_app
from controlplane.config import MasterSettings
from controlplane.services.auth import client_hash
from tests.support.db_template import drop_templates, migrated

PG_DSN = os.environ.get("RESOLUTE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
PASSWORD = "Test-Passw0rd!"


def _pg_available() -> str | None:
    async def probe() -> None:
        conn = await asyncpg.connect(PG_DSN, timeout=3)
        await conn.close()

    try:
        asyncio.run(probe())
    except Exception as exc:  # the reason is shown on the skipped tests
        return f"no PostgreSQL at {PG_DSN}: {exc}"
    return None


_PG_SKIP = _pg_available()


# scripts/test.sh runs the suite on two pytest-xdist workers, a module's tests together on one
# (`--dist loadfile`: many share a module-scoped master and the real client's login). Modules
# that start Docker containers share the one engine, whose containers agents find by agent-id
# labels (`local-agent-0` in every `det deploy local`, the same in each worker): such a module
# holds this machine-wide lock from its first test to its last, so no two run at once. A module
# is taken to use the engine when it says "docker" anywhere (a miss would be a race between
# workers, a false alarm only a wait); one that names docker without starting a container says
# so with `pytestmark = pytest.mark.no_docker_engine` and does not wait for the lock.
DOCKER_LOCK = Path(tempfile.gettempdir()) / "resolute-tests-docker.lock"
_docker_modules: dict[Path, bool] = {}


def _uses_docker(path: Path) -> bool:
    if path not in _docker_modules:
        text = path.read_text(errors="replace") if path.suffix == ".py" else ""
        _docker_modules[path] = "docker" in text.lower()
    return _docker_modules[path]


def needs_docker_lock(module: pytest.Module | pytest.Item, path: Path) -> bool:
    return module.get_closest_marker("no_docker_engine") is None and _uses_docker(path)


@pytest.fixture(scope="module", autouse=True)
def _docker_modules_one_at_a_time(request: pytest.FixtureRequest) -> Iterator[None]:
    if not needs_docker_lock(request.node, Path(str(request.path))):
        yield
        return
    with DOCKER_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session", autouse=True)
def _schema_templates() -> Iterator[None]:
    yield
    asyncio.run(drop_templates(PG_DSN))


@pytest.fixture(scope="session")
def pg_skip_reason() -> str | None:
    return _PG_SKIP


async def _admin_exec(sql: str) -> None:
    conn = await asyncpg.connect(PG_DSN)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@asynccontextmanager
async def fresh_pg_database() -> AsyncIterator[str]:
    """A PostgreSQL database with a unique name, dropped afterwards (the server is shared)."""
    name = f"resolute_test_{uuid.uuid4().hex[:12]}"
    await _admin_exec(f'CREATE DATABASE "{name}"')
    base = PG_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    try:
        yield f"{base}/{name}"
    finally:
        await _admin_exec(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session", autouse=True)
def _task_users_reach_temp_dirs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """As root, agents start tasks as their owners' Unix users (agent/task_user.py), who must
    pass through the test's folders to their run dir, pylib and Python: pytest makes every
    temporary folder 0700, so give others search permission (o+x, no listing) on them."""
    if os.geteuid() != 0:
        return
    base = tmp_path_factory.getbasetemp()
    # pytest's own folders above it, not the user's: pytest-of-root/pytest-N, and under
    # pytest-xdist one more level (popen-gw0).
    for folder in (base, *base.parents):
        if folder != base and not folder.name.startswith(("pytest-", "popen-gw")):
            break
        folder.chmod(folder.stat().st_mode | 0o011)
    make = tmp_path_factory.mktemp

    def mktemp(basename: str, numbered: bool = True) -> Path:
        path = make(basename, numbered)
        path.chmod(path.stat().st_mode | 0o011)
        return path

    tmp_path_factory.mktemp = mktemp  # type: ignore[method-assign]
    # The tasks' Python is this one (a task venv over it): on our machines it lives under
    # /root/.pyenv, and /root is 0700. Task users need to pass through (o+x: no listing), to
    # the interpreter and to this venv's site-packages (a checkout in a 0700 folder, such as
    # `mktemp -d`, hid jupyterlab from the notebook tests).
    python = Path(os.path.realpath(sys.executable))
    for folder in {*python.parents, *Path(sys.prefix).resolve().parents}:
        mode = folder.stat().st_mode
        if not mode & 0o001:
            folder.chmod(mode | 0o001)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'master.db'}"
        return
    if _PG_SKIP:
        pytest.skip(_PG_SKIP)
    async with fresh_pg_database() as url:
        yield url


def make_settings(db_url: str, tmp_path: Path, **extra: object) -> MasterSettings:
    return MasterSettings(
        data_dir=tmp_path / "data",
        db={"url": db_url},
        security={"initial_user_password": PASSWORD},
        **extra,
    )


@dataclass
class Master:
    client: AsyncTestClient
    admin: dict[str, str]
    user: dict[str, str]

    async def login(self, username: str, password: str = PASSWORD) -> dict[str, str]:
        r = await self.client.post(
            "/api/v1/auth/login",
            json={"username": username, "password": client_hash(password), "isHashed": True},
        )
        assert r.status_code == 200, r.text
        return {"Authorization": f"Bearer {r.json()['token']}"}


@pytest.fixture
async def master(db_url: str, tmp_path: Path) -> AsyncIterator[Master]:
    await migrated(db_url)
    app = create_app(make_settings(db_url, tmp_path), announce=lambda _: None)
    async with AsyncTestClient(app=app, base_url="http://127.0.0.1") as client:
        m = Master(client=client, admin={}, user={})
        m.admin = await m.login("admin")
        m.user = await m.login("determined")
        yield m


@pytest.fixture
def context_dir(tmp_path: Path) -> Iterator[Path]:
    ctx = tmp_path / "ctx"
    (ctx / "sub").mkdir(parents=True)
    (ctx / "train.py").write_text("print('hello from the trial')\n")
    (ctx / "sub" / "data.txt").write_text("1 2 3\n")
    yield ctx
