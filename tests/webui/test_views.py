"""The experiment page's heat map, the job queue's weight and reorder controls (and a non-owner's
refusal), and compare over experiments with its config diff, in Debian's Chromium against a
live master; axe-core checks each view."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.webui import DIST
from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import experiment_yaml
from tests.support import webui_seed
from tests.support.live_master import LiveMaster, StartMaster, eventually
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
LRS = (0.1, 0.01, 0.001)


def _grid(i: int, j: int) -> dict:
    # 24 trials over 3 x 4 cells: two trials per cell, so a cell shows a mean; 24 distinct
    # dropouts are too many for one row each and fall into 8 equal-width bins.
    return {"lr": LRS[j % 3], "layers": 1 + (j // 3) % 4, "dropout": j / 46}


async def _jobs(m: LiveMaster, headers: dict[str, str]) -> list[dict[str, Any]]:
    r = await m.http.get("/api/v1/job-queues-v2", headers=headers)
    return [j["full"] for j in r.json()["jobs"]]


_ROWS_ARE = """(ids) => JSON.stringify([...document.querySelectorAll("tr[data-job-id]")]
  .map((r) => r.dataset.jobId)) === JSON.stringify(ids)"""

_FIELDS_ARE = """([jobId, priority, weight]) => {
  const row = document.querySelector(`tr[data-job-id='${jobId}']`);
  return row?.querySelector("input[name=priority]")?.value === priority
    && row?.querySelector("input[name=weight]")?.value === weight;
}"""

# Sets a row's field and clicks its button in one task: no render can come between them.
_TYPE_AND_CLICK = """([jobId, field, value]) => {
  const row = document.querySelector(`tr[data-job-id='${jobId}']`);
  const input = row.querySelector(`input[name=${field}]`);
  input.value = value;
  input.dispatchEvent(new Event("input", { bubbles: true }));
  row.querySelector(`button[data-action=${field}]`).click();
}"""


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_heat_map_job_queue_and_experiment_compare(
    start_master: StartMaster, db_url: str
) -> None:
    m = await start_master()
    for name in ("alice", "bob"):
        await m.post("/api/v1/users", {"user": {"username": name}, "password": PASSWORD})
    alice = await m.login("alice", PASSWORD)
    me = (await m.http.get("/api/v1/me", headers=alice)).json()["user"]["id"]
    grid = await webui_seed.seed(
        db_url, owner_id=me, experiments=1, trials_per=24, prefix="grid", hparams_of=_grid
    )
    pair = await webui_seed.seed(db_url, owner_id=me, experiments=2, trials_per=3, prefix="pair")
    # No agents: both experiments wait in the default pool's queue, a before b.
    submitted = []
    for name in ("a", "b"):
        r = await m.http.post(
            "/api/v1/experiments",
            json={"config": experiment_yaml(name), "activate": True},
            headers=alice,
        )
        assert r.status_code == 200, r.text
        submitted.append(r.json()["experiment"]["jobId"])

    async def queued() -> list[dict[str, Any]]:
        jobs = await _jobs(m, alice)
        return jobs if [j["jobId"] for j in jobs] == submitted else []

    await eventually(queued, timeout=10)

    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        await login(page, m.url, "alice")

        # Heat map: each cell is the mean searcher metric of the API's trials in it.
        exp = grid.experiment_ids[0]
        r = await m.http.get(f"/api/v1/experiments/{exp}/trials?limit=100", headers=alice)
        want: dict[tuple[str, str], list[float]] = {}
        for t in r.json()["trials"]:
            key = (json.dumps(t["hparams"]["lr"]), json.dumps(t["hparams"]["layers"]))
            want.setdefault(key, []).append(t["searcherMetricValue"])
        await page.goto(f"{m.url}/det/experiments/{exp}")
        await page.wait_for_selector("[data-trial-id]")
        await page.get_by_role("tab", name="hyperparameters").click()
        await page.wait_for_selector("#heat-table tbody tr")
        await page.locator("#heat-x").select_option("lr")
        await page.locator("#heat-y").select_option("layers")
        await wait_until(page, "window.__heatmap.x === 'lr' && window.__heatmap.y === 'layers'")
        heat = await page.evaluate("window.__heatmap")
        assert heat["xLabels"] == ["0.001", "0.01", "0.1"]
        assert heat["yLabels"] == ["1", "2", "3", "4"]
        got = {
            (heat["xLabels"][c["x"]], heat["yLabels"][c["y"]]): (c["mean"], c["count"])
            for c in heat["cells"]
        }
        assert got == {k: (pytest.approx(sum(v) / len(v)), len(v)) for k, v in want.items()}
        assert await page.locator("#heat-table tbody tr").count() == 12
        await page.locator("#heat-y").select_option("dropout")
        await wait_until(page, "window.__heatmap.y === 'dropout'")
        binned = await page.evaluate("window.__heatmap")
        assert len(binned["yLabels"]) == 8 and binned["yLabels"][0] == "0–0.0625"
        per_bin = [0] * 8
        for c in binned["cells"]:
            per_bin[c["y"]] += c["count"]
        assert per_bin == [3, 3, 3, 3, 3, 3, 3, 3]
        assert not await axe_violations(page), await axe_violations(page)

        # Compare two experiments from the list's selection; the URL keeps it over a reload.
        a, b = pair.experiment_ids
        await page.goto(f"{m.url}/det/projects/1/experiments")
        await page.get_by_label(f"Select experiment {a}").check()
        await page.get_by_label(f"Select experiment {b}").check()
        await page.locator("#compare-selected").click()
        await page.wait_for_url(f"**/det/compare?experiments={a},{b}")
        # The curves' answer is held back until the diff is checked: a chart must not be
        # published empty meanwhile (CI once read an empty one).
        release = asyncio.Event()

        async def hold(route: Any) -> None:
            await release.wait()
            await route.continue_()

        await page.route("**/api/v1/trials/time-series*", hold)
        await page.reload()
        await page.wait_for_selector("#config-diff tbody tr")
        assert await page.locator("#compare-ids").text_content() == f"{a}, {b}"
        diff = page.locator("#config-diff tbody tr")
        keys = await diff.evaluate_all("rs => rs.map(r => r.dataset.key)")
        # pair-0 and pair-1 differ in name, lr and layers; searcher and resources agree.
        assert keys == ["hyperparameters.layers.val", "hyperparameters.lr.val", "name"]
        row = page.locator("#config-diff tr[data-key=name] td")
        assert await row.all_text_contents() == ['"pair-0"', '"pair-1"']
        hp = await page.locator("#hparam-diff tbody tr.differs").evaluate_all(
            "rs => rs.map(r => r.dataset.key)"
        )
        assert hp == ["layers", "lr"]
        await page.get_by_label("Only differing config keys").uncheck()
        await page.wait_for_selector("#config-diff tr[data-key='searcher.metric']")
        assert await page.evaluate("(window.__charts || {})['compare-validation'] === undefined")
        release.set()
        await wait_until(page, "window.__charts && window.__charts['compare-validation']")
        chart = await page.evaluate("window.__charts['compare-validation']")
        assert len(chart["labels"]) == 6, "the validation curves of both experiments' trials"
        assert not await axe_violations(page), await axe_violations(page)

        # The job queue: move b ahead of a, give a weight 3; both show in the API.
        await page.goto(f"{m.url}/det/clusters")
        row_b = page.locator(f"tr[data-job-id='{submitted[1]}']")
        await row_b.locator("button[data-action=ahead]").click()
        await row_b.locator(".job-msg", has_text="move ahead: done").wait_for()
        assert [j["jobId"] for j in await _jobs(m, alice)] == submitted[::-1]
        # The row's message comes before the table's refetch reorders it, and moving a row
        # takes the focus out of a field being typed in (CI once lost the "3" that way).
        await page.wait_for_function(_ROWS_ARE, arg=submitted[::-1])
        row_a = page.locator(f"tr[data-job-id='{submitted[0]}']")
        await row_a.locator("input[name=weight]").fill("3")
        await row_a.locator("button[data-action=weight]").click()
        await row_a.locator(".job-msg", has_text="weight: done").wait_for()
        weights = {j["jobId"]: j["weight"] for j in await _jobs(m, alice)}
        assert weights[submitted[0]] == 3
        # Typing and clicking within one task, before the page re-renders (a quick click on a
        # busy page): the value the field shows is sent, not the last render's.
        async with page.expect_response("**/api/v1/job-queues") as answered:
            await page.evaluate(_TYPE_AND_CLICK, [submitted[0], "weight", "5"])
        assert (await answered.value).ok
        weights = {j["jobId"]: j["weight"] for j in await _jobs(m, alice)}
        assert weights[submitted[0]] == 5
        async with page.expect_response("**/api/v1/job-queues") as answered:
            await page.evaluate(_TYPE_AND_CLICK, [submitted[0], "priority", "7"])
        assert (await answered.value).ok
        jobs = await _jobs(m, alice)
        assert {j["jobId"]: j["priority"] for j in jobs}[submitted[0]] == 7
        # A priority ahead of the default's 42 takes a back in front of b.
        assert [j["jobId"] for j in jobs] == submitted
        assert not await axe_violations(page), await axe_violations(page)
        # A change made elsewhere (the CLI) shows in the fields on screen at the next refresh.
        r = await m.http.post(
            "/api/v1/job-queues",
            json={"updates": [{"jobId": submitted[0], "priority": 9, "weight": 2}]},
            headers=alice,
        )
        assert r.status_code == 200, r.text
        await page.wait_for_function(_FIELDS_ARE, arg=[submitted[0], "9", "2"], timeout=15_000)

        # Bob owns neither job: his change is refused in the row, and nothing moves.
        await page.get_by_role("button", name="Sign out").click()
        await login(page, m.url, "bob")
        await page.goto(f"{m.url}/det/clusters")
        row_a = page.locator(f"tr[data-job-id='{submitted[0]}']")
        await row_a.locator("button[data-action=behind]").click()
        refusal = f"only the owner of job {submitted[0]} or an admin may change it"
        await row_a.locator(".job-msg", has_text=refusal).wait_for()
        assert [j["jobId"] for j in await _jobs(m, alice)] == submitted
        await browser.close()
