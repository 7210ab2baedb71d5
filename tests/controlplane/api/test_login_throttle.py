"""Login throttling through the API: 429 + Retry-After before any hashing, per user and address."""

from __future__ import annotations

import contextlib
import ipaddress
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient

from controlplane.api.login_guard import client_address
from controlplane.app import create_app
from controlplane.config import MasterSettings
from controlplane.services import auth
from controlplane.services.auth import client_hash
from tests.conftest import PASSWORD
from tests.support.live_master import live_master

LOGIN = "/api/v1/auth/login"


def body(user: str, password: str) -> dict[str, object]:
    return {"username": user, "password": client_hash(password), "isHashed": True}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def scrypt_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every scrypt the master runs, recorded (the hashing a throttle must save)."""
    calls: list[str] = []
    real = auth._scrypt

    def counting(hashed: str, salt: bytes) -> bytes:
        calls.append(hashed)
        return real(hashed, salt)

    monkeypatch.setattr(auth, "_scrypt", counting)
    return calls


@contextlib.asynccontextmanager
async def master(
    tmp_path: Path, clock: Callable[[], datetime], **throttle: Any
) -> AsyncIterator[AsyncTestClient]:
    throttle.setdefault("refusal_delay_s", 0)  # answered at once, unless a test says
    settings = MasterSettings(
        data_dir=tmp_path,
        security={"initial_user_password": PASSWORD, "login_throttle": throttle},
    )
    app = create_app(settings, clock=clock, announce=lambda _: None)
    async with AsyncTestClient(app=app) as client:
        yield client


async def test_sixty_wrong_passwords_check_only_the_free_ones(
    tmp_path: Path, scrypt_calls: list[str]
) -> None:
    """The report: 60 wrong passwords in a row, each checked. Now 5 are, 55 get 429 unhashed."""
    clock = Clock()
    async with master(tmp_path, clock) as c:
        scrypt_calls.clear()
        codes = [
            (await c.post(LOGIN, json=body("admin", f"guess{i}"))).status_code for i in range(60)
        ]
        assert codes == [403] * 5 + [429] * 55
        assert len(scrypt_calls) == 5
        r = await c.post(LOGIN, json=body("admin", PASSWORD))  # even the right one waits
        assert r.status_code == 429
        assert r.headers["retry-after"] == "1"
        assert r.json()["message"] == "too many failed logins; retry after 1 s"
        assert set(r.json()) == {"code", "message", "error", "details"}


async def test_delay_doubles_and_a_success_resets_it(tmp_path: Path) -> None:
    clock = Clock()
    async with master(tmp_path, clock, free_attempts_per_user=2, base_delay_s=10) as c:
        for _ in range(2):
            assert (await c.post(LOGIN, json=body("admin", "nope"))).status_code == 403
        assert (await c.post(LOGIN, json=body("admin", "nope"))).headers["retry-after"] == "10"
        clock.advance(10)
        assert (await c.post(LOGIN, json=body("admin", "nope"))).status_code == 403
        assert (await c.post(LOGIN, json=body("admin", "nope"))).headers["retry-after"] == "20"
        clock.advance(20)
        assert (await c.post(LOGIN, json=body("admin", PASSWORD))).status_code == 200
        # the user's counter is clear again: two free failures
        for _ in range(2):
            assert (await c.post(LOGIN, json=body("admin", "nope"))).status_code == 403
        assert (await c.post(LOGIN, json=body("admin", "nope"))).status_code == 429


async def test_unknown_names_are_counted_like_real_ones(tmp_path: Path) -> None:
    """A 429 for existing users only would tell which users exist."""
    async with master(tmp_path, Clock(), free_attempts_per_user=3) as c:
        for name in ("admin", "ghost"):
            codes = [(await c.post(LOGIN, json=body(name, "x"))).status_code for _ in range(4)]
            assert codes == [403, 403, 403, 429]


async def test_one_address_spraying_names_is_throttled_and_x_forwarded_for_is_ignored(
    tmp_path: Path,
) -> None:
    async with master(tmp_path, Clock(), free_attempts_per_address=4) as c:
        codes = [
            (
                await c.post(
                    LOGIN, json=body(f"user{i}", "x"), headers={"X-Forwarded-For": f"10.0.0.{i}"}
                )
            ).status_code
            for i in range(6)
        ]
        assert codes == [403] * 4 + [429] * 2


async def test_a_refusal_is_held_for_the_refusal_delay(tmp_path: Path) -> None:
    """A guesser ignoring Retry-After gets one answer per delay and connection, not thousands."""
    async with master(tmp_path, Clock(), free_attempts_per_user=1, refusal_delay_s=0.3) as c:
        assert (await c.post(LOGIN, json=body("admin", "x"))).status_code == 403
        t0 = time.perf_counter()
        r = await c.post(LOGIN, json=body("admin", "x"))
        assert r.status_code == 429 and time.perf_counter() - t0 >= 0.3


async def test_throttling_can_be_turned_off(tmp_path: Path) -> None:
    async with master(tmp_path, Clock(), enabled=False) as c:
        codes = {(await c.post(LOGIN, json=body("admin", "x"))).status_code for _ in range(12)}
        assert codes == {403}


async def test_a_guessing_address_does_not_lock_out_another_address(tmp_path: Path) -> None:
    """Real HTTP from two loopback source addresses: 127.0.0.2 sprays names until it gets 429;
    127.0.0.3 still logs in as admin. Behind a trusted proxy, X-Forwarded-For names the client."""
    settings = MasterSettings(
        data_dir=tmp_path,
        security={
            "initial_user_password": PASSWORD,
            "login_throttle": {
                "free_attempts_per_address": 5,
                "trusted_proxies": ["127.0.0.4"],
                "refusal_delay_s": 0,
            },
        },
    )
    async with live_master(settings, PASSWORD) as m:

        def client(source: str) -> httpx.AsyncClient:
            transport = httpx.AsyncHTTPTransport(local_address=source)
            return httpx.AsyncClient(base_url=m.url, transport=transport, timeout=30)

        async with client("127.0.0.2") as guesser, client("127.0.0.3") as user:
            codes = [
                (await guesser.post(LOGIN, json=body(f"n{i}", "x"))).status_code for i in range(7)
            ]
            assert codes == [403] * 5 + [429] * 2
            assert (await user.post(LOGIN, json=body("admin", PASSWORD))).status_code == 200
        async with client("127.0.0.4") as proxy:
            forwarded = {"X-Forwarded-For": "127.0.0.2"}  # the guesser, through the proxy
            r = await proxy.post(LOGIN, json=body("admin", PASSWORD), headers=forwarded)
            assert r.status_code == 429
            forwarded = {"X-Forwarded-For": "127.0.0.2, 127.0.0.5"}  # a client the proxy saw
            r = await proxy.post(LOGIN, json=body("admin", PASSWORD), headers=forwarded)
            assert r.status_code == 200


@pytest.mark.parametrize(
    ("peer", "header", "expected"),
    [
        ("10.1.1.1", None, "10.1.1.1"),
        ("10.1.1.1", "1.2.3.4", "10.1.1.1"),  # not a trusted proxy: its header is the client's
        ("192.168.0.9", "1.2.3.4", "1.2.3.4"),
        ("192.168.0.9", "6.6.6.6, 1.2.3.4", "1.2.3.4"),  # the leftmost one could be forged
        ("192.168.0.9", "1.2.3.4, 192.168.0.7", "1.2.3.4"),  # two trusted hops
        ("192.168.0.9", "192.168.0.7", "192.168.0.7"),  # only proxies: the furthest
        ("192.168.0.9", " , ", "192.168.0.9"),
        ("192.168.0.9", "x" * 500, "x" * 64),  # a forged hop cannot make a long key
        ("testclient", "1.2.3.4", "testclient"),
    ],
)
def test_client_address(peer: str, header: str | None, expected: str) -> None:
    trusted = [ipaddress.ip_network("192.168.0.0/24")]
    assert client_address(peer, header, trusted) == expected
