"""Stored passwords: one scrypt per login whoever asks, a salt of its own for every password."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import select, update

from controlplane.app import create_app
from controlplane.config import MasterSettings
from controlplane.db.models import User
from controlplane.services import auth
from controlplane.services.auth import client_hash, hash_password, verify_password
from tests.conftest import PASSWORD

LOGIN = "/api/v1/auth/login"


@pytest.fixture
def scrypt_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = auth._scrypt

    def counting(hashed: str, salt: bytes) -> bytes:
        calls.append(hashed)
        return real(hashed, salt)

    monkeypatch.setattr(auth, "_scrypt", counting)
    return calls


@contextlib.asynccontextmanager
async def master(
    tmp_path: Path, **security: Any
) -> AsyncIterator[tuple[AsyncTestClient, Litestar]]:
    security.setdefault("initial_user_password", PASSWORD)
    security.setdefault("login_throttle", {"enabled": False})  # these tests measure, not guess
    app = create_app(MasterSettings(data_dir=tmp_path, security=security), announce=lambda _: None)
    async with AsyncTestClient(app=app) as client:
        yield client, app


async def stored_hashes(app: Litestar) -> dict[str, str]:
    async with app.state["api"].sessionmaker() as session:
        rows = await session.execute(select(User.username, User.password_hash))
        return {name: stored for name, stored in rows}


class TestOneScryptWhateverIsStored:
    @pytest.mark.parametrize(
        ("stored", "sent", "matches"),
        [
            (None, client_hash("pw"), False),  # no such user
            (None, "", False),
            ("", "", True),  # the legacy empty password
            ("", client_hash("pw"), False),
            ("garbage", client_hash("pw"), False),
            ("scrypt$zz$zz", client_hash("pw"), False),
            ("bcrypt$00$00", client_hash("pw"), False),
            (hash_password(client_hash("pw")), client_hash("pw"), True),
            (hash_password(client_hash("pw")), client_hash("other"), False),
            (hash_password(""), "", True),
            (hash_password(""), client_hash("pw"), False),
        ],
    )
    def test_verify(
        self, scrypt_calls: list[str], stored: str | None, sent: str, matches: bool
    ) -> None:
        scrypt_calls.clear()
        assert verify_password(stored, sent) is matches
        assert scrypt_calls == [sent]

    async def test_login_of_an_unknown_user_hashes_like_a_wrong_password(
        self, tmp_path: Path, scrypt_calls: list[str]
    ) -> None:
        async with master(tmp_path) as (c, _):
            for user in ("admin", "ghost"):
                scrypt_calls.clear()
                sent = {"username": user, "password": client_hash("wrong"), "isHashed": True}
                assert (await c.post(LOGIN, json=sent)).status_code == 403
                assert scrypt_calls == [client_hash("wrong")], user

    async def test_unknown_users_take_as_long_as_wrong_passwords(self, tmp_path: Path) -> None:
        """Loose on purpose (a shared machine): without the dummy hash the ratio was 0.04 here."""
        samples: dict[str, list[float]] = {"admin": [], "ghost": []}
        async with master(tmp_path) as (c, _):
            for i in range(16):
                for user in ("admin", "ghost") if i % 2 else ("ghost", "admin"):
                    sent = {"username": user, "password": client_hash(f"w{i}"), "isHashed": True}
                    t0 = time.perf_counter()
                    assert (await c.post(LOGIN, json=sent)).status_code == 403
                    samples[user].append(time.perf_counter() - t0)
        ratio = statistics.median(samples["ghost"]) / statistics.median(samples["admin"])
        assert ratio >= 0.7, samples


class TestSaltPerPassword:
    @pytest.mark.parametrize("password", ["", "Sh4red-initial"])
    async def test_builtin_users_share_neither_salt_nor_hash(
        self, tmp_path: Path, password: str
    ) -> None:
        async with master(
            tmp_path, initial_user_password=password, allow_empty_passwords=password == ""
        ) as (c, app):
            stored = await stored_hashes(app)
            assert stored["admin"] != stored["determined"]
            salts = {h.split("$")[1] for h in stored.values()}
            assert len(salts) == 2 and all(h.startswith("scrypt$") for h in stored.values())
            for user in ("admin", "determined"):
                # the real client's form (an empty password is sent as "", isHashed) and plain
                for sent in (
                    {"username": user, "password": client_hash(password), "isHashed": True},
                    {"username": user, "password": password},
                ):
                    assert (await c.post(LOGIN, json=sent)).status_code == 200, (user, sent)

    async def test_a_legacy_empty_hash_still_logs_in_and_is_salted_then(
        self, tmp_path: Path
    ) -> None:
        async with master(tmp_path, initial_user_password="", allow_empty_passwords=True) as (
            c,
            app,
        ):
            async with app.state["api"].sessionmaker() as session:
                await session.execute(update(User).values(password_hash=""))
                await session.commit()
            wrong = {"username": "admin", "password": client_hash("x"), "isHashed": True}
            assert (await c.post(LOGIN, json=wrong)).status_code == 403
            assert (await stored_hashes(app))["admin"] == ""
            empty = {"username": "admin", "password": "", "isHashed": True}
            assert (await c.post(LOGIN, json=empty)).status_code == 200
            stored = await stored_hashes(app)
            assert stored["admin"].startswith("scrypt$") and stored["determined"] == ""
            assert (await c.post(LOGIN, json=empty)).status_code == 200
            assert (
                await c.post(LOGIN, json={**empty, "username": "determined"})
            ).status_code == 200
            stored = await stored_hashes(app)
            assert stored["admin"] != stored["determined"]

    async def test_user_created_with_an_empty_password_gets_a_salted_hash(
        self, tmp_path: Path
    ) -> None:
        async with master(tmp_path, allow_empty_passwords=True) as (c, app):
            admin = await c.post(LOGIN, json={"username": "admin", "password": PASSWORD})
            headers = {"Authorization": f"Bearer {admin.json()['token']}"}
            for name in ("e1", "e2"):
                new = {"user": {"username": name, "active": True}, "password": "", "isHashed": True}
                assert (await c.post("/api/v1/users", json=new, headers=headers)).status_code == 200
            stored = await stored_hashes(app)
            assert stored["e1"] != stored["e2"] and stored["e1"].startswith("scrypt$")
            for name in ("e1", "e2"):
                sent = {"username": name, "password": "", "isHashed": True}
                assert (await c.post(LOGIN, json=sent)).status_code == 200
