"""The web UI's session: an HttpOnly SameSite=Strict `auth` cookie set at login and cleared at
logout, CSRF rules on the writes it authenticates, and the real client's login unchanged."""

from __future__ import annotations

from http.cookies import SimpleCookie
from pathlib import Path

import httpx
import pytest
from litestar.testing import AsyncTestClient

from controlplane.app import create_app
from controlplane.config import MasterSettings
from controlplane.services.auth import client_hash
from tests.conftest import PASSWORD, Master
from tests.controlplane.test_tls import self_signed

ORIGIN = "http://127.0.0.1"  # the `master` fixture's client talks to http://127.0.0.1
UI = {"X-Resolute-CSRF": "1", "Origin": ORIGIN}
BODY = {"username": "admin", "password": client_hash(PASSWORD), "isHashed": True}


def set_cookie(r: httpx.Response) -> dict[str, str]:
    """The `auth` Set-Cookie's attributes (lowercased names; flags map to "")."""
    raw = [v for k, v in r.headers.multi_items() if k == "set-cookie"]
    assert len(raw) == 1, raw
    morsel = SimpleCookie(raw[0])["auth"]
    attrs = {k: str(v) for k, v in morsel.items() if v not in ("", False)}
    attrs["value"] = morsel.value
    flags = raw[0].lower()
    for flag in ("httponly", "secure"):
        if f"; {flag}" in flags:
            attrs[flag] = ""
    return attrs


async def ui_login(c: AsyncTestClient, headers: dict[str, str] | None = None) -> httpx.Response:
    r = await c.post("/api/v1/auth/login", json=BODY, headers=headers or UI)
    c.cookies.clear()  # each test sends the cookie it means to, explicitly
    return r


async def ui_session(c: AsyncTestClient) -> str:
    """A UI login's token, as the browser would hold it (only in the cookie)."""
    r = await ui_login(c)
    assert r.status_code == 200, r.text
    return set_cookie(r)["value"]


def cookie(token: str, **headers: str) -> dict[str, str]:
    """The request headers of a browser holding the session cookie."""
    return {"Cookie": f"auth={token}", **headers}


class TestLogin:
    async def test_the_ui_gets_an_httponly_strict_cookie_and_no_token(self, master: Master) -> None:
        r = await ui_login(master.client)
        assert r.status_code == 200, r.text
        assert set(r.json()) == {"user"} and r.json()["user"]["username"] == "admin"
        assert r.headers["cache-control"] == "no-store"
        cookie = set_cookie(r)
        assert cookie["value"] and cookie["value"] not in r.text
        assert "httponly" in cookie and cookie["samesite"].lower() == "strict"
        assert cookie["path"] == "/" and int(cookie["max-age"]) > 0
        assert "secure" not in cookie  # plain http, no TLS configured

    async def test_the_real_clients_login_is_unchanged(self, master: Master) -> None:
        r = await master.client.post("/api/v1/auth/login", json=BODY)
        assert r.status_code == 200
        assert r.json()["token"] and r.json()["user"]["username"] == "admin"
        assert "set-cookie" not in r.headers

    async def test_over_https_the_cookie_is_secure(self, master: Master) -> None:
        r = await master.client.post(
            "https://127.0.0.1/api/v1/auth/login",
            json=BODY,
            headers={"X-Resolute-CSRF": "1", "Origin": "https://127.0.0.1"},
        )
        assert r.status_code == 200, r.text
        assert "secure" in set_cookie(r)

    async def test_a_tls_master_sets_secure_even_behind_plain_http(
        self, db_url: str, tmp_path: Path
    ) -> None:
        cert, key = self_signed(tmp_path)
        settings = MasterSettings(
            data_dir=tmp_path / "data",
            db={"url": db_url},
            security={"initial_user_password": PASSWORD, "tls": {"cert": cert, "key": key}},
        )
        app = create_app(settings, announce=lambda _: None)
        async with AsyncTestClient(app=app, base_url=ORIGIN) as c:
            r = await c.post("/api/v1/auth/login", json=BODY, headers=UI)
            assert r.status_code == 200, r.text
            assert "secure" in set_cookie(r)
            token = set_cookie(r)["value"]
            r = await c.post("/api/v1/auth/logout", headers=cookie(token, **UI))
            assert r.status_code == 200 and "secure" in set_cookie(r)

    @pytest.mark.parametrize(
        "headers",
        [
            {"X-Resolute-CSRF": "1", "Origin": "https://evil.example"},
            {"X-Resolute-CSRF": "1", "Origin": "null"},
            {"X-Resolute-CSRF": "1"},
        ],
    )
    async def test_another_page_cannot_log_the_browser_in(
        self, master: Master, headers: dict[str, str]
    ) -> None:
        r = await ui_login(master.client, headers)
        assert r.status_code == 403, r.text
        assert "refused a cookie-authenticated write" in r.json()["message"]
        assert "set-cookie" not in r.headers

    async def test_a_refused_cross_site_login_is_refused_before_the_password(
        self, master: Master
    ) -> None:
        """Another page's login attempts are turned away before the throttle and the password
        check: they neither reveal whether the password was right nor lock the user out."""
        c = master.client
        wrong = {**BODY, "password": client_hash("not the password")}
        for _ in range(10):  # more than the throttle's free attempts per user
            r = await c.post(
                "/api/v1/auth/login",
                json=wrong,
                headers={"X-Resolute-CSRF": "1", "Origin": "https://evil.example"},
            )
            assert r.status_code == 403, r.text
            assert "refused a cookie-authenticated write" in r.json()["message"]
        r = await ui_login(c)
        assert r.status_code == 200, r.text


class TestCookieAuth:
    async def test_reads_and_the_uis_writes_work(self, master: Master) -> None:
        c = master.client
        jar = await ui_session(c)
        r = await c.get("/api/v1/me", headers=cookie(jar))
        assert r.status_code == 200 and r.json()["user"]["username"] == "admin"
        me = r.json()["user"]["id"]
        r = await c.patch(
            f"/api/v1/users/{me}", json={"displayName": "Ada"}, headers=cookie(jar, **UI)
        )
        assert r.status_code == 200, r.text
        assert r.json()["user"]["displayName"] == "Ada"

    @pytest.mark.parametrize(
        ("headers", "says"),
        [
            ({"Origin": ORIGIN}, "X-Resolute-CSRF"),
            ({}, "X-Resolute-CSRF"),
            ({"X-Resolute-CSRF": "1", "Origin": "https://evil.example"}, "Origin"),
            ({"X-Resolute-CSRF": "1", "Origin": "null"}, "opaque"),
            ({"X-Resolute-CSRF": "1", "Sec-Fetch-Site": "cross-site"}, "Sec-Fetch-Site"),
        ],
    )
    async def test_writes_without_proof_of_origin_are_refused(
        self, master: Master, headers: dict[str, str], says: str
    ) -> None:
        c = master.client
        jar = await ui_session(c)
        me = (await c.get("/api/v1/me", headers=cookie(jar))).json()["user"]["id"]
        r = await c.patch(
            f"/api/v1/users/{me}", json={"displayName": "Mallory"}, headers=cookie(jar, **headers)
        )
        assert r.status_code == 403, r.text
        assert says in r.json()["message"]
        r = await c.get(f"/api/v1/users/{me}", headers=master.admin)
        assert r.json()["user"]["displayName"] != "Mallory"

    async def test_bearer_writes_need_no_csrf_header(self, master: Master) -> None:
        c = master.client
        me = (await c.get("/api/v1/me", headers=master.admin)).json()["user"]["id"]
        foreign = {**master.admin, "Origin": "https://evil.example"}
        r = await c.patch(f"/api/v1/users/{me}", json={"displayName": "Bo"}, headers=foreign)
        assert r.status_code == 200, r.text

    async def test_a_bearer_header_wins_over_a_cookie(self, master: Master) -> None:
        c = master.client
        r = await c.get("/api/v1/me", headers=cookie("stale", **master.user))
        assert r.status_code == 200 and r.json()["user"]["username"] == "determined"


class TestLogout:
    async def test_logout_clears_the_cookie_and_deletes_the_session(self, master: Master) -> None:
        c = master.client
        jar = await ui_session(c)
        r = await c.post("/api/v1/auth/logout", headers=cookie(jar, **UI))
        assert r.status_code == 200, r.text
        cleared = set_cookie(r)
        assert cleared["value"] == "" and cleared["max-age"] == "0"
        assert "httponly" in cleared and cleared["samesite"].lower() == "strict"
        assert r.headers["cache-control"] == "no-store"
        # The session row is gone: the same token is refused as a cookie and as a bearer.
        assert (await c.get("/api/v1/me", headers=cookie(jar))).status_code == 401
        bearer = {"Authorization": f"Bearer {jar}"}
        assert (await c.get("/api/v1/me", headers=bearer)).status_code == 401

    async def test_a_cross_origin_logout_is_refused(self, master: Master) -> None:
        c = master.client
        jar = await ui_session(c)
        r = await c.post("/api/v1/auth/logout", headers=cookie(jar))
        assert r.status_code == 403
        assert (await c.get("/api/v1/me", headers=cookie(jar))).status_code == 200

    async def test_a_bearer_logout_still_ends_its_token(self, master: Master) -> None:
        c = master.client
        headers = await master.login("determined")
        assert (await c.post("/api/v1/auth/logout", headers=headers)).status_code == 200
        assert (await c.get("/api/v1/me", headers=headers)).status_code == 401
