"""Playwright on Debian's Chromium, shared by the web UI's browser tests and benchmark."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.conftest import PASSWORD

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
AXE = Path(__file__).resolve().parents[2] / "webui" / "node_modules" / "axe-core" / "axe.min.js"
# Playwright cannot download its own browsers here; these are Chromium's flags for a container.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WCAG = "['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']"
# Every Content-Security-Policy violation a document reports (login() installs it).
WATCH_CSP = """
window.__csp = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__csp.push(`CSP: ${e.violatedDirective} blocked ${e.blockedURI}`));
"""


async def axe_violations(page: Any) -> list[str]:
    """axe-core's WCAG 2.1 A/AA violations on the page as it is now, and the CSP violations
    the page reported since it loaded (the UI must work under its own policy)."""
    csp = await page.evaluate("window.__csp || []")
    # Evaluated, not added as a <script>: the UI's CSP refuses inline scripts (as it should).
    await page.evaluate(AXE.read_text())
    result = await page.evaluate(
        "axe.run(document, {runOnly: {type: 'tag', values: WCAG}})".replace("WCAG", WCAG)
    )
    return csp + [
        f"{v['id']}: {v['help']} ({len(v['nodes'])} nodes: {v['nodes'][0]['target']})"
        for v in result["violations"]
    ]


async def wait_until(page: Any, expression: str, **options: Any) -> Any:
    """`page.wait_for_function` on a JavaScript expression, sent as a function: Playwright
    evaluates a bare expression with the page's `eval`, which the UI's CSP (no 'unsafe-eval')
    refuses, so the tests run the UI under its real policy."""
    return await page.wait_for_function(f"() => ({expression})", **options)


async def login(page: Any, url: str, username: str, password: str = PASSWORD) -> None:
    await page.add_init_script(WATCH_CSP)
    await page.goto(f"{url}/det/")
    await page.get_by_label("Username").fill(username)
    await page.get_by_label("Password").fill(password)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_selector("#exp-title")
