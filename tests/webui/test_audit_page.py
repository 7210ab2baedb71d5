"""The admin page's audit log (/det/admin/audit) in Chromium: an admin reads the entries,
newest first, filters them by actor, action and time, and pages through them; a plain user
gets no Admin link and an "admins only" message. axe-core checks both views (and the UI's CSP
reports nothing)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from controlplane.api.webui import DIST
from tests.conftest import PASSWORD
from tests.support.live_master import StartMaster
from tests.webui.browser import CHROMIUM, FLAGS, axe_violations, login, wait_until

playwright = pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="no chromium (apt-get install chromium)"
    ),
    pytest.mark.skipif(not (DIST / "index.html").exists(), reason="web UI not built"),
]
GROUPS = 52  # with the two users made and alice's refused attempt: more than a page of 50
ROWS = "[data-audit-id]"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_admins_read_filter_and_page_the_audit_log_and_others_are_told_no(
    start_master: StartMaster, db_url: str
) -> None:
    m = await start_master()
    for name in ("alice", "bob"):
        await m.post("/api/v1/users", {"user": {"username": name}, "password": PASSWORD})
    for i in range(GROUPS):
        await m.post("/api/v1/groups", {"name": f"team {i}"})
    alice = await m.login("alice", PASSWORD)
    r = await m.http.post("/api/v1/groups", json={"name": "mine"}, headers=alice)
    assert r.status_code == 403
    total = (await m.get("/api/v1/master/audit", params={"limit": 1}))["pagination"]["total"]
    assert total == GROUPS + 3

    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        await login(page, m.url, "admin")
        await page.get_by_role("link", name="Admin").click()
        await page.wait_for_url("**/det/admin/audit")
        count = page.locator("#audit-count")
        await count.filter(has_text=f"Entries 1–50 of {total}").wait_for()
        assert await page.locator(ROWS).count() == 50
        # newest first: alice's refused attempt heads the log
        first = page.locator(ROWS).first
        assert await first.locator("td").nth(1).inner_text() == "alice"
        assert await first.locator("td").nth(4).inner_text() == "denied"
        assert not await axe_violations(page), await axe_violations(page)

        await page.get_by_role("button", name="Older").click()
        await count.filter(has_text=f"Entries 51–{total} of {total}").wait_for()
        assert await page.get_by_role("button", name="Older").is_disabled()
        await page.get_by_role("button", name="Newer").click()
        await count.filter(has_text=f"Entries 1–50 of {total}").wait_for()

        await page.get_by_label("Actor").fill("alice")
        await page.get_by_role("button", name="Filter").click()
        await count.filter(has_text="Entries 1–1 of 1").wait_for()
        assert "actor=alice" in page.url

        await page.get_by_role("button", name="Clear").click()
        await page.get_by_label("Action").fill("POST /api/v1/users")
        await page.get_by_role("button", name="Filter").click()
        await count.filter(has_text="Entries 1–2 of 2").wait_for()
        cells = await page.locator(f"{ROWS} td:nth-child(3) code").all_inner_texts()
        assert cells == ["POST /api/v1/users", "POST /api/v1/users"]

        # Since a minute from now (the browser's local time, sent as UTC): nothing yet.
        later = datetime.now(UTC) + timedelta(minutes=1)
        local = await page.evaluate(
            "(iso) => { const d = new Date(iso); const p = (n) => String(n).padStart(2, '0');"
            " return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T`"
            " + `${p(d.getHours())}:${p(d.getMinutes())}`; }",
            later.isoformat(),
        )
        await page.get_by_label("Since").fill(local)
        await page.get_by_role("button", name="Filter").click()
        await count.filter(has_text="No entries.").wait_for()
        assert await page.locator(ROWS).count() == 0
        assert not await axe_violations(page), await axe_violations(page)
        await page.close()

        # alice: no Admin link, and the page says the log is for admins
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        await login(page, m.url, "alice")
        await wait_until(page, "document.querySelector('nav a') !== null")
        assert await page.get_by_role("link", name="Admin").count() == 0
        await page.goto(f"{m.url}/det/admin/audit")
        alert = page.get_by_role("alert")
        await alert.filter(has_text="Admins only").wait_for()
        assert await page.locator(ROWS).count() == 0
        assert not await axe_violations(page), await axe_violations(page)
        await browser.close()
