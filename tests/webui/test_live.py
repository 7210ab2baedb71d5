"""A trial that logs and reports while its page is open: new log lines and chart points appear
without a reload, and a kill from the `det` CLI shows on the page; a non-owner's bulk action
lists a refusal per experiment."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from controlplane.api.webui import DIST
from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import add_agent, experiment_yaml
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import StartMaster, eventually
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
TRAINING = "window.__charts && window.__charts['trial-training']"


def _report(steps: int, loss: float) -> dict:
    body = {"trialRunId": 1, "stepsCompleted": steps, "metrics": {"avgMetrics": {"loss": loss}}}
    return {"group": "training", "metrics": body}


async def _det(url: str, tmp_path: Path, *args: str) -> str:
    det = str(Path(sys.executable).parent / "det")
    env = {
        **os.environ,
        "DET_MASTER": url,
        "DET_USER": "alice",
        "DET_PASS": PASSWORD,
        "DET_DEBUG_CONFIG_PATH": str(tmp_path / "det-config"),
    }
    proc = await asyncio.create_subprocess_exec(
        det, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, out.decode()
    return out.decode()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_live_trial_updates_the_page_and_a_cli_kill_shows(
    start_master: StartMaster, agents: list[FakeAgent], db_url: str, tmp_path: Path
) -> None:
    m = await start_master()
    await add_agent(m, agents, "a1", 4)
    await m.post("/api/v1/users", {"user": {"username": "alice"}, "password": PASSWORD})
    alice = await m.login("alice", PASSWORD)
    r = await m.http.post(
        "/api/v1/experiments",
        json={"config": experiment_yaml("live"), "activate": True},
        headers=alice,
    )
    exp = r.json()["experiment"]["id"]
    r = await m.http.get(f"/api/v1/experiments/{exp}/trials", headers=alice)
    trial = r.json()["trials"][0]

    async def running() -> bool:
        got = await m.http.get(f"/api/v1/trials/{trial['id']}", headers=alice)
        return got.json()["trial"]["state"] == "STATE_ACTIVE"

    await eventually(running)
    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        await login(page, m.url, "alice")
        await page.goto(f"{m.url}/det/experiments/{exp}/trials/{trial['id']}")
        await page.wait_for_selector("#trial-state")
        for n in (1, 2):
            r = await m.http.post(
                "/api/v1/task/logs",
                json={"logs": [{"taskId": trial["taskId"], "log": f"live line {n}\n"}]},
                headers=alice,
            )
            assert r.status_code == 200, r.text
            r = await m.http.post(
                f"/api/v1/trials/{trial['id']}/metrics",
                json=_report(n * 10, 1.0 / n),
                headers=alice,
            )
            assert r.status_code == 200, r.text
            await page.wait_for_function(
                "n => document.querySelector('#log-lines').textContent.includes(`live line ${n}`)",
                arg=n,
            )
            await page.wait_for_function(
                f"s => {TRAINING} && {TRAINING}.series.length > 0 && "
                f"{TRAINING}.series[0].x.includes(s)",
                arg=n * 10,
            )
        chart = await page.evaluate(f"{TRAINING}")
        assert chart["series"][0]["x"] == [10, 20] and chart["series"][0]["y"] == [1.0, 0.5]
        assert not await axe_violations(page), await axe_violations(page)

        # The experiment's page: its views pass axe too, and its code tab reads the context.
        await page.goto(f"{m.url}/det/experiments/{exp}")
        await page.wait_for_selector("[data-trial-id]")
        assert not await axe_violations(page), await axe_violations(page)
        for tab in ("hyperparameters", "config", "code"):
            await page.get_by_role("tab", name=tab).click()
            assert not await axe_violations(page), (tab, await axe_violations(page))
        await page.wait_for_selector("text=no stored context directory")
        await page.goto(f"{m.url}/det/experiments/{exp}/trials/{trial['id']}")
        await page.wait_for_selector("#trial-state")

        await _det(m.url, tmp_path, "experiment", "kill", str(exp))
        await wait_until(
            page,
            "!['ACTIVE', 'PAUSED'].includes(document.querySelector('#trial-state').textContent)",
            timeout=15_000,
        )
        state = await page.locator("#trial-state").text_content()
        assert state in {"STOPPING_KILLED", "CANCELED", "STOPPING_CANCELED"}

        # A non-owner's bulk pause: the result lists the refusal of that experiment.
        await page.get_by_role("button", name="Sign out").click()
        await login(page, m.url, "determined")
        await page.get_by_label(f"Select experiment {exp}").check()
        await page.locator("button[data-verb=pause]").click()
        assert await page.locator("#confirm-text").text_content() == "Pause 1 experiment?"
        await page.get_by_role("button", name="pause 1").click()
        await page.wait_for_selector("#bulk-errors")
        assert await page.locator("#bulk-summary").text_content() == "0 changed, 1 refused."
        errors = await page.locator("#bulk-errors li").all_text_contents()
        assert errors == [
            f"Experiment {exp}: only the owner of experiment {exp} or an admin may change it"
        ]
        await browser.close()
