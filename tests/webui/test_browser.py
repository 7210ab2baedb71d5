"""The web UI in Debian's Chromium (Playwright) against a live master with 10,000 seeded
experiments (100,000 trials): the filtered, sorted list and its count, scrolling to the end,
"select all matching" archive, the 100,000-step chart with its spike and exact zoom, compare's
URL selection, keyboard navigation, and axe-core's WCAG 2.1 AA checks."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.webui import DIST
from tests.conftest import PASSWORD
from tests.support import webui_seed
from tests.support.live_master import StartMaster
from tests.webui.browser import CHROMIUM, FLAGS, axe_violations, login, wait_until

playwright = pytest.importorskip("playwright.async_api")

TRAINING = "window.__charts && window.__charts['trial-training']"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="no chromium (apt-get install chromium)"
    ),
    pytest.mark.skipif(
        not (DIST / "index.html").exists(), reason="web UI not built (scripts/setup.sh)"
    ),
]


def _filter(*conds: tuple[str, str, Any]) -> str:
    children = [{"kind": "field", "columnName": c, "operator": o, "value": v} for c, o, v in conds]
    return json.dumps(
        {
            "filterGroup": {"kind": "group", "conjunction": "and", "children": children},
            "showArchived": False,
        }
    )


async def _apply(page: Any, conds: list[tuple[str, str, str]], sort: str | None = None) -> None:
    for i, (col, op, val) in enumerate(conds):
        await page.get_by_role("button", name="Add condition").click()
        await page.locator(f"input[name=col-{i}]").fill(col)
        await page.locator(f"select[name=op-{i}]").select_option(op)
        await page.locator(f"input[name=val-{i}]").fill(val)
    if sort:
        await page.locator("#sort").fill(sort)
        await page.locator("#sort").press("Enter")
    await page.get_by_role("button", name="Apply filter").click()


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_the_web_ui_on_ten_thousand_experiments(
    start_master: StartMaster, db_url: str, tmp_path: Path
) -> None:
    m = await start_master()
    await m.post("/api/v1/users", {"user": {"username": "alice"}, "password": PASSWORD})
    alice = await m.login("alice", PASSWORD)
    me = (await m.http.get("/api/v1/me", headers=alice)).json()["user"]["id"]
    seeded = await webui_seed.seed(
        db_url, owner_id=me, experiments=10_000, trials_per=10, marked=37
    )
    spike_trial = seeded.trial_ids[0]
    await webui_seed.seed_series(
        db_url,
        spike_trial,
        steps=100_000,
        names=("loss", "accuracy", "lr"),
        spike_at=77_777,
        spike=40.0,
    )
    # CI keeps RESOLUTE_TEST_ARTIFACTS as build artifacts; locally they stay in the tmp dir.
    shots = Path(os.environ.get("RESOLUTE_TEST_ARTIFACTS", tmp_path)) / "webui-screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        await login(page, m.url, "alice")
        assert not await axe_violations(page), await axe_violations(page)

        # A filter on a hyperparameter and a state, sorted by a validation metric.
        await _apply(
            page,
            [("hp.layers", "=", "3"), ("state", "=", "STATE_COMPLETED")],
            sort="validation.validation_loss=asc",
        )
        flt = _filter(("hp.layers", "=", "3"), ("state", "=", "STATE_COMPLETED"))
        r = await m.http.post(
            "/api/v1/experiments-search",
            headers=alice,
            json={"projectId": 1, "filter": flt, "limit": 0},
        )
        total = r.json()["pagination"]["total"]
        want = sum(
            1
            for i in range(10_000)
            if webui_seed.layers_of(i) == 3 and webui_seed.state_of(i) == "COMPLETED"
        )
        assert total == want
        await wait_until(
            page, f"document.querySelector('#match-count').textContent.startsWith('{total} ')"
        )
        # Scroll to the end: every rendered row has its data; the last row is the last match.
        body = page.locator(".grid-body")
        for _ in range(200):
            await body.evaluate("b => b.scrollTop = b.scrollHeight")
            loaded = await page.locator("#loaded-count").text_content()
            rows = page.locator(".grid-body [role=row]")
            count = await rows.count()
            ids = await rows.evaluate_all(
                "rs => rs.map(r => r.querySelector('[data-col=id]').textContent)"
            )
            assert count > 0 and all(ids), "a blank row while scrolling"
            if loaded == f"{total} of {total} loaded":
                break
            await page.wait_for_function(
                "n => document.querySelector('#loaded-count').textContent !== n", arg=loaded
            )
        assert loaded == f"{total} of {total} loaded"
        await page.screenshot(path=str(shots / "list-end.png"))

        # Select all matching on a filter that matches 37 of 10,000, archive: the dialog says 37.
        await page.goto(f"{m.url}/det/projects/1/experiments")
        await _apply(page, [("tags", "contains", "marked")])
        await wait_until(
            page, "document.querySelector('#match-count').textContent.startsWith('37 ')"
        )
        await page.locator("#select-all-matching").click()
        await page.locator("button[data-verb=archive]").click()
        assert await page.locator("#confirm-text").text_content() == "Archive 37 experiments?"
        await page.get_by_role("button", name="archive 37").click()
        await page.wait_for_selector("#bulk-summary")
        paused = {seeded.experiment_ids[i] for i in range(37) if webui_seed.state_of(i) == "PAUSED"}
        assert await page.locator("#bulk-summary").text_content() == (
            f"{37 - len(paused)} changed, {len(paused)} refused."
        )
        marked = json.loads(_filter(("tags", "contains", "marked")))
        marked["showArchived"] = True
        r = await m.http.post(
            "/api/v1/experiments-search",
            headers=alice,
            json={"projectId": 1, "limit": 100, "filter": json.dumps(marked)},
        )
        archived = {
            e["experiment"]["id"] for e in r.json()["experiments"] if e["experiment"]["archived"]
        }
        assert archived == set(seeded.experiment_ids[:37]) - paused
        r = await m.http.post(
            "/api/v1/experiments-search", headers=alice, json={"projectId": 1, "limit": 0}
        )
        assert r.json()["pagination"]["total"] == 10_000 - len(archived)

        # The 100,000-step chart: the spike is drawn zoomed out; a 1,000-step zoom draws all.
        exp_id = seeded.experiment_ids[0]
        await page.goto(f"{m.url}/det/experiments/{exp_id}/trials/{spike_trial}")
        await wait_until(page, f"{TRAINING} && {TRAINING}.series.length === 3")
        chart = await page.evaluate("window.__charts['trial-training']")
        loss = chart["series"][chart["labels"].index(f"trial {spike_trial} loss")]
        assert 77_777 in loss["x"] and loss["y"][loss["x"].index(77_777)] == 40.0
        assert len(loss["x"]) <= 900 * 3 * 3
        await page.screenshot(path=str(shots / "chart-zoomed-out.png"))
        over = page.locator("[data-chart=trial-training] .u-over").first  # a plot per metric
        box = await over.bounding_box()
        x0 = box["x"] + box["width"] * 0.5
        await page.mouse.move(x0, box["y"] + 20)
        await page.mouse.down()
        await page.mouse.move(x0 + box["width"] * 0.009, box["y"] + 40, steps=3)
        await page.mouse.up()
        await wait_until(page, "window.__charts['trial-training'].zoom !== null")
        zoomed = await page.evaluate("window.__charts['trial-training']")
        xs = zoomed["series"][0]["x"]
        assert 500 <= len(xs) <= 1500, "a zoom to about 1,000 steps"
        assert xs == list(range(xs[0], xs[-1] + 1)), "every raw step in the window is drawn"
        r = await m.http.get(
            "/api/v1/trials/time-series",
            headers=alice,
            params={
                "trialIds": spike_trial,
                "group": "training",
                "maxDatapoints": 10_000,
                "startBatches": xs[0],
                "endBatches": xs[-1],
            },
        )
        api_points = r.json()["trials"][0]["metrics"][0]["data"]
        for k, label in enumerate(zoomed["labels"]):
            name = label.split(" ", 2)[2]
            assert zoomed["series"][k]["y"] == [pt["values"][name] for pt in api_points]
        await page.screenshot(path=str(shots / "chart-zoomed-in.png"))
        assert not await axe_violations(page), await axe_violations(page)

        # Compare 10 trials of 2 experiments; a reload keeps the selection.
        picked = seeded.trial_ids[10:15] + seeded.trial_ids[20:25]
        await page.goto(f"{m.url}/det/compare?trials={','.join(map(str, picked))}")
        await page.wait_for_selector("#compare-ids")
        await page.reload()
        assert await page.locator("#compare-ids").text_content() == ", ".join(map(str, picked))
        await page.wait_for_selector("table tbody tr")
        assert not await axe_violations(page), await axe_violations(page)

        # Keyboard only: the skip link comes first, then the navigation reaches the cluster page.
        await page.goto(f"{m.url}/det/projects/1/experiments")
        # The shell renders once the UI knows its session (GET /api/v1/me with the cookie);
        # until then the page is "Loading…" and has nothing to tab to.
        await page.wait_for_selector("a.skip")
        await page.keyboard.press("Tab")
        assert await page.evaluate("document.activeElement.textContent") == "Skip to content"
        await page.keyboard.press("Tab")
        assert await page.evaluate("document.activeElement.textContent") == "Experiments"
        await page.keyboard.press("Tab")
        assert await page.evaluate("document.activeElement.textContent") == "Cluster and queue"
        await page.keyboard.press("Enter")
        await page.wait_for_selector("#cluster-title")
        assert not await axe_violations(page), await axe_violations(page)
        await browser.close()
    print(f"screenshots in {shots}")
