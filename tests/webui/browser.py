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


async def axe_violations(page: Any) -> list[str]:
    """axe-core's WCAG 2.1 A/AA violations on the page as it is now."""
    await page.add_script_tag(path=str(AXE))
    result = await page.evaluate(
        "axe.run(document, {runOnly: {type: 'tag', values: WCAG}})".replace("WCAG", WCAG)
    )
    return [
        f"{v['id']}: {v['help']} ({len(v['nodes'])} nodes: {v['nodes'][0]['target']})"
        for v in result["violations"]
    ]


async def login(page: Any, url: str, username: str, password: str = PASSWORD) -> None:
    await page.goto(f"{url}/det/")
    await page.get_by_label("Username").fill(username)
    await page.get_by_label("Password").fill(password)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_selector("#exp-title")
