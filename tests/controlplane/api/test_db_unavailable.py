"""A database that cannot be reached gives a retryable 503, and the master recovers after."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import create_async_engine

from controlplane.app import create_app
from controlplane.db.session import make_sessionmaker
from tests.conftest import Master, make_settings


@pytest.mark.parametrize(
    "dead_url",
    [
        "postgresql+asyncpg://postgres@127.0.0.1:1/nowhere",
        "sqlite+aiosqlite:////proc/no-such-dir/x.db",  # cannot be created or opened
    ],
)
async def test_unreachable_database_is_503_then_recovers(
    db_url: str, tmp_path: Path, dead_url: str
) -> None:
    app = create_app(make_settings(db_url, tmp_path), announce=lambda _: None)
    async with AsyncTestClient(app=app) as client:
        m = Master(client=client, admin={}, user={})
        m.user = await m.login("determined")
        good = app.state["api"]
        dead = create_async_engine(dead_url)
        app.state["api"] = dataclasses.replace(good, sessionmaker=make_sessionmaker(dead))
        try:
            r = await client.get("/api/v1/experiments", headers=m.user)
            assert r.status_code == 503, r.text
            assert r.json()["code"] == 14 and "retry" in r.json()["message"]
        finally:
            await dead.dispose()
            app.state["api"] = good
        assert (await client.get("/api/v1/experiments", headers=m.user)).status_code == 200
