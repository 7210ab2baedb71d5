"""`GET /health` (Determined's path, no login): 200 and "up" while the database answers, 503
and "down" while it cannot be reached, 200 again when it is back."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import create_async_engine

from controlplane.app import create_app
from controlplane.db.session import make_sessionmaker
from tests.conftest import make_settings


@pytest.mark.parametrize(
    "dead_url",
    [
        "postgresql+asyncpg://postgres@127.0.0.1:1/nowhere",
        "sqlite+aiosqlite:////proc/no-such-dir/x.db",
    ],
)
async def test_health_follows_the_database(db_url: str, tmp_path: Path, dead_url: str) -> None:
    app = create_app(make_settings(db_url, tmp_path), announce=lambda _: None)
    async with AsyncTestClient(app=app) as client:
        r = await client.get("/health")
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "up" and r.json()["database"] == "up"
        assert r.json()["resource_managers"][0]["status"] == "up"
        good = app.state["api"]
        dead = create_async_engine(dead_url)
        app.state["api"] = dataclasses.replace(good, sessionmaker=make_sessionmaker(dead))
        try:
            r = await client.get("/health")
            assert r.status_code == 503
            assert r.json()["status"] == "down" and r.json()["database"] == "down"
        finally:
            await dead.dispose()
            app.state["api"] = good
        assert (await client.get("/health")).status_code == 200
