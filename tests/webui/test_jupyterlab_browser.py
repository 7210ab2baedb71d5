"""JupyterLab and TensorBoard in Chromium through the proxy, at their tasks' own origins: a real
master and agent (process runtime), the admin signed in by the web UI's cookie, `/proxy/{id}/`
opened as `det notebook open` opens it (issue 38: the isolation must not break them)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from controlplane.services.auth import client_hash
from tests.agent.test_end_to_end import Processes
from tests.conftest import PASSWORD
from tests.controlplane.api.test_interactive_live import ready_notebook
from tests.support import interactive_cluster
from tests.support.interactive_cluster import login, start_cluster
from tests.webui.browser import CHROMIUM, FLAGS

playwright = pytest.importorskip("playwright.async_api")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(400),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="no chromium"),
]
procs = interactive_cluster.procs


async def test_jupyterlab_runs_a_cell_at_its_own_origin(procs: Processes, tmp_path: Path) -> None:
    port = await start_cluster(procs, tmp_path)
    main = f"http://localhost:{port}"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
        admin = await login(c, "admin", PASSWORD)
        task_id = await ready_notebook(c, admin, {})
    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        context = await browser.new_context()
        r = await context.request.post(
            f"{main}/api/v1/auth/login",
            data={"username": "admin", "password": client_hash(PASSWORD), "isHashed": True},
            headers={"X-Resolute-CSRF": "1", "Origin": main},
        )
        assert r.ok, await r.text()
        page = await context.new_page()
        await page.goto(f"{main}/proxy/{task_id}/lab")
        assert page.url.startswith(f"http://{task_id}.localhost:{port}/proxy/{task_id}/lab")
        # a notebook from the launcher, a cell run on the kernel (over the proxied WebSocket)
        await page.locator(".jp-LauncherCard[title*='Python 3']").first.click(timeout=120_000)
        # Typed only once the kernel is up: until then JupyterLab may redraw the notebook and
        # the keystrokes land nowhere (seen under load with two browser tests at once).
        idle = page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first
        await idle.wait_for(timeout=120_000)
        cell = page.locator(".jp-Notebook .jp-Cell .cm-content").first
        await cell.click(timeout=60_000)
        await page.keyboard.type("print(6 * 7)")
        assert (await cell.text_content() or "").strip() == "print(6 * 7)"
        await page.keyboard.press("Shift+Enter")
        output = page.locator(".jp-OutputArea-output").first
        await output.wait_for(timeout=120_000)
        assert (await output.text_content() or "").strip() == "42"
        await browser.close()
