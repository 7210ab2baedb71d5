"""Users and auth through the API: first start, login, tokens, admin-only administration."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from controlplane.app import create_app
from controlplane.config import MasterSettings
from controlplane.services.auth import client_hash
from tests.conftest import PASSWORD, Master


def login_body(user: str, password: str) -> dict[str, object]:
    return {"username": user, "password": client_hash(password), "isHashed": True}


async def test_first_start_generates_and_prints_a_password_once(tmp_path: Path) -> None:
    said: list[str] = []
    settings = MasterSettings(data_dir=tmp_path)
    async with AsyncTestClient(app=create_app(settings, announce=said.append)) as c:
        assert len(said) == 1
        password = said[0].split("\n\n")[1].strip()
        assert len(password) >= 20
        r = await c.post("/api/v1/auth/login", json=login_body("admin", password))
        assert r.status_code == 200 and r.json()["user"]["admin"] is True
        r = await c.post("/api/v1/auth/login", json=login_body("determined", ""))
        assert r.status_code == 403
    async with AsyncTestClient(app=create_app(settings, announce=said.append)) as c:
        assert len(said) == 1  # a restart neither regenerates nor prints it again
    db = (tmp_path / "resolute.db").read_bytes()
    assert password.encode() not in db and client_hash(password).encode() not in db


async def test_empty_initial_password_is_refused_unless_allowed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty passwords are not allowed"):
        MasterSettings(data_dir=tmp_path, security={"initial_user_password": ""})
    allowed = MasterSettings(
        data_dir=tmp_path / "b",
        security={"initial_user_password": "", "allow_empty_passwords": True},
    )
    async with AsyncTestClient(app=create_app(allowed, announce=lambda _: None)) as c:
        r = await c.post("/api/v1/auth/login", json=login_body("determined", ""))
        assert r.status_code == 200


async def test_plain_password_login_and_logout(master: Master) -> None:
    c = master.client
    r = await c.post("/api/v1/auth/login", json={"username": "admin", "password": PASSWORD})
    assert r.status_code == 200
    headers = {"Authorization": f"Bearer {r.json()['token']}"}
    assert (await c.get("/api/v1/me", headers=headers)).json()["user"]["username"] == "admin"
    assert (await c.post("/api/v1/auth/logout", headers=headers)).status_code == 200
    r = await c.get("/api/v1/me", headers=headers)
    assert r.status_code == 401 and r.json()["error"]["error"]


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}, {"Authorization": ""}],
)
async def test_bad_credentials_are_401(master: Master, headers: dict[str, str]) -> None:
    r = await master.client.get("/api/v1/experiments", headers=headers)
    assert r.status_code == 401
    assert set(r.json()) == {"code", "message", "error", "details"}


async def test_wrong_password_and_unknown_user_look_the_same(master: Master) -> None:
    a = await master.client.post("/api/v1/auth/login", json=login_body("admin", "wrong"))
    b = await master.client.post("/api/v1/auth/login", json=login_body("ghost", "wrong"))
    assert a.status_code == b.status_code == 403
    assert a.json()["message"] == b.json()["message"]


async def test_tokens_expire(db_url: str, tmp_path: Path) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    settings = MasterSettings(
        data_dir=tmp_path,
        db={"url": db_url},
        security={"initial_user_password": PASSWORD, "token_lifetime_s": 3600},
    )
    app = create_app(settings, clock=lambda: now[0], announce=lambda _: None)
    async with AsyncTestClient(app=app) as c:
        token = (await c.post("/api/v1/auth/login", json=login_body("admin", PASSWORD))).json()
        headers = {"Authorization": f"Bearer {token['token']}"}
        assert (await c.get("/api/v1/me", headers=headers)).status_code == 200
        now[0] += timedelta(hours=2)
        assert (await c.get("/api/v1/me", headers=headers)).status_code == 401


async def test_admin_manages_users_and_others_cannot(master: Master) -> None:
    c = master.client
    body = {
        "user": {"username": "alice", "admin": False, "active": True},
        "password": client_hash("Alice-pw1"),
        "isHashed": True,
    }
    r = await c.post("/api/v1/users", json=body, headers=master.user)
    assert r.status_code == 403
    r = await c.post("/api/v1/users", json=body, headers=master.admin)
    assert r.status_code == 200, r.text
    alice_id = r.json()["user"]["id"]
    assert (await c.post("/api/v1/users", json=body, headers=master.admin)).status_code == 409
    users = (await c.get("/api/v1/users", headers=master.user)).json()
    assert {u["username"] for u in users["users"]} == {"admin", "determined", "alice"}
    alice = await master.login("alice", "Alice-pw1")
    # a user changes their own password; the old token is revoked
    r = await c.patch(
        f"/api/v1/users/{alice_id}",
        json={"password": client_hash("Alice-pw2"), "isHashed": True},
        headers=alice,
    )
    assert r.status_code == 200
    assert (await c.get("/api/v1/me", headers=alice)).status_code == 401
    alice = await master.login("alice", "Alice-pw2")
    # but not deactivate others, nor themselves become admin
    r = await c.patch("/api/v1/users/1", json={"active": False}, headers=alice)
    assert r.status_code == 403
    r = await c.patch(f"/api/v1/users/{alice_id}", json={"admin": True}, headers=alice)
    assert r.status_code == 403
    # an admin deactivates alice: her token stops working and she cannot log in
    r = await c.patch(f"/api/v1/users/{alice_id}", json={"active": False}, headers=master.admin)
    assert r.status_code == 200 and r.json()["user"]["active"] is False
    assert (await c.get("/api/v1/me", headers=alice)).status_code == 401
    r = await c.post("/api/v1/auth/login", json=login_body("alice", "Alice-pw2"))
    assert r.status_code == 403


async def test_empty_password_change_is_refused(master: Master) -> None:
    r = await master.client.patch(
        "/api/v1/users/2", json={"password": "", "isHashed": True}, headers=master.user
    )
    assert r.status_code == 400 and "empty passwords" in r.json()["message"]


async def test_non_owner_may_read_but_not_change(master: Master) -> None:
    c = master.client
    cfg = "name: x\nentrypoint: python3 t.py\nsearcher: {name: single, metric: loss}\n"
    exp = (await c.post("/api/v1/experiments", json={"config": cfg}, headers=master.admin)).json()
    exp_id = exp["experiment"]["id"]
    assert (await c.get(f"/api/v1/experiments/{exp_id}", headers=master.user)).status_code == 200
    for verb in ("pause", "kill", "archive"):
        r = await c.post(f"/api/v1/experiments/{exp_id}/{verb}", headers=master.user)
        assert r.status_code == 403, verb
    r = await c.patch(
        f"/api/v1/experiments/{exp_id}", json={"resources": {"priority": 5}}, headers=master.user
    )
    assert r.status_code == 403
