"""The web UI's session in Debian's Chromium: logging in through the login page sets an HttpOnly
cookie no script can read, a reload stays logged in, no token is stored anywhere a script can
reach (an old `resolute.token` is dropped on load), cookie-authenticated writes without the
UI's CSRF header are refused, the CSP blocks nothing the UI needs, and signing out ends it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.webui import DIST
from tests.conftest import PASSWORD
from tests.support.live_master import StartMaster
from tests.webui.browser import CHROMIUM, FLAGS, WATCH_CSP, login

playwright = pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="no chromium (apt-get install chromium)"
    ),
    pytest.mark.skipif(
        not (DIST / "index.html").exists(), reason="web UI not built (scripts/setup.sh)"
    ),
]

OLD_UI = (
    "t => { localStorage.setItem('resolute.token', t); document.cookie = `auth=${t}; path=/`; }"
)
STORED = """() => JSON.stringify({
  cookie: document.cookie,
  local: Object.fromEntries(Object.entries(localStorage)),
  session: Object.fromEntries(Object.entries(sessionStorage)),
})"""
# A write a script on this origin makes with the cookie, with or without the UI's header.
WRITE = """async ([id, csrf]) => {
  const headers = {"Content-Type": "application/json"};
  if (csrf) headers["X-Resolute-CSRF"] = "1";
  const r = await fetch(`/api/v1/users/${id}`, {method: "PATCH", headers,
    credentials: "same-origin", body: JSON.stringify({displayName: csrf ? "Alice" : "Mallory"})});
  return [r.status, await r.text()];
}"""


async def stored(page: Any) -> dict[str, Any]:
    return json.loads(await page.evaluate(STORED))


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_login_reload_and_sign_out_keep_the_session_out_of_scripts(
    start_master: StartMaster, db_url: str
) -> None:
    m = await start_master()
    await m.post("/api/v1/users", {"user": {"username": "alice"}, "password": PASSWORD})
    alice = await m.login("alice", PASSWORD)
    alice_id = (await m.http.get("/api/v1/me", headers=alice)).json()["user"]["id"]
    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        context = await browser.new_context()
        await context.add_init_script(WATCH_CSP)  # from the first page on
        page = await context.new_page()

        # A browser an older UI left a token in (localStorage and a script-set cookie).
        await page.goto(f"{m.url}/det/")
        await page.evaluate(OLD_UI, alice["Authorization"].removeprefix("Bearer "))
        await page.reload()
        await page.get_by_role("button", name="Sign in").wait_for()
        assert await stored(page) == {
            "cookie": "",
            "local": {"resolute.theme": "light"},  # the UI's one stored setting
            "session": {},
        }

        await login(page, m.url, "alice")
        cookies = {c["name"]: c for c in await context.cookies()}
        assert cookies["auth"]["httpOnly"] and cookies["auth"]["sameSite"] == "Strict"
        token = cookies["auth"]["value"]
        state = await stored(page)
        assert "auth=" not in state["cookie"]
        assert token not in json.dumps(state)
        assert "resolute.token" not in state["local"]

        await page.reload()
        await page.wait_for_selector("#exp-title")  # still logged in
        assert "auth=" not in await page.evaluate("document.cookie")

        # The session's reads work; its writes need the UI's header (a proxied page on this
        # origin is the proxy's to sandbox: its Origin is then `null`, also refused).
        status, text = await page.evaluate(WRITE, [alice_id, False])
        assert status == 403 and "X-Resolute-CSRF" in text
        status, _ = await page.evaluate(WRITE, [alice_id, True])
        assert status == 200
        me = (await m.http.get("/api/v1/me", headers=alice)).json()["user"]
        assert me["displayName"] == "Alice"

        # Another page's reads go with the cookie, and nothing the UI does trips its CSP.
        await page.goto(f"{m.url}/det/tasks")
        await page.wait_for_selector("#tasks-commands")
        assert await page.evaluate("window.__csp") == []

        await page.get_by_role("button", name="Sign out").click()
        await page.get_by_role("button", name="Sign in").wait_for()
        assert "auth" not in {c["name"] for c in await context.cookies()}
        r = await m.http.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 401  # the session row is gone, not only the cookie
        await page.reload()
        await page.get_by_role("button", name="Sign in").wait_for()
        await browser.close()
