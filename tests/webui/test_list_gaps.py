"""The experiment list's hyperparameter column and filter over a random search (the range in the
column, the trials' sampled values in the filter), the experiment page's logs tab, and the tasks
page listing notebooks beside commands, in Debian's Chromium against a live master; axe-core
checks each view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controlplane.api.webui import DIST
from tests.conftest import PASSWORD
from tests.support import webui_seed
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
N, PER = 30, 3


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_sampled_hp_filter_logs_tab_and_tasks(start_master: StartMaster, db_url: str) -> None:
    m = await start_master()
    await m.post("/api/v1/users", {"user": {"username": "alice"}, "password": PASSWORD})
    alice = await m.login("alice", PASSWORD)
    me = (await m.http.get("/api/v1/me", headers=alice)).json()["user"]["id"]
    seeded = await webui_seed.seed(db_url, owner_id=me, experiments=N, trials_per=PER)
    want = sum(1 for i in range(N) if any(webui_seed.dropout_of(i, j) > 0.4 for j in range(PER)))
    assert 0 < want < N
    exp = seeded.experiment_ids[0]
    trials = (await m.http.get(f"/api/v1/experiments/{exp}/trials", headers=alice)).json()
    first = trials["trials"][0]
    lines = [
        ("hello from the first trial", "LOG_LEVEL_INFO"),
        ("a warning about the batch size", "LOG_LEVEL_WARNING"),
        ("an error in the loader", "LOG_LEVEL_ERROR"),
    ]
    r = await m.http.post(
        "/api/v1/task/logs",
        json={
            "logs": [
                {"taskId": first["taskId"], "log": f"{text}\n", "level": level}
                for text, level in lines
            ]
        },
        headers=alice,
    )
    assert r.status_code in (200, 204), r.text
    await webui_seed.seed_series(
        db_url, first["id"], steps=3000, names=("loss",), spike_at=1500, spike=5.0
    )
    r = await m.http.post(
        "/api/v1/notebooks",
        json={"config": {"description": "my notebook"}, "files": []},
        headers=alice,
    )
    assert r.status_code == 200, r.text
    notebook = r.json()["notebook"]["id"]

    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        await login(page, m.url, "alice")

        # The filter reads what the trials drew from the `dropout` range.
        await page.get_by_role("button", name="Add condition").click()
        await page.locator("input[name=col-0]").fill("hp.dropout")
        await page.locator("select[name=op-0]").select_option(">")
        await page.locator("input[name=val-0]").fill("0.4")
        await page.get_by_role("button", name="Apply filter").click()
        await wait_until(
            page, f"document.querySelector('#match-count').textContent.startsWith('{want} ')"
        )
        # The column shows the config's range, as Determined's list does.
        await page.get_by_role("button", name="Columns").click()
        await page.get_by_label("hp.dropout").check()
        cells = page.locator(".grid-body [data-col='hp.dropout']")
        await cells.first.wait_for()
        assert set(await cells.all_text_contents()) == {"0 – 0.5"}
        lr = page.locator(".grid-body [data-col='hp.lr']")
        await page.get_by_label("hp.lr").check()
        await lr.first.wait_for()
        assert all(json.loads(t) > 0 for t in await lr.all_text_contents())
        assert not await axe_violations(page), await axe_violations(page)

        # A nested group: state = COMPLETED AND (a sampled dropout > 0.4 OR layers = 3).
        await page.goto(f"{m.url}/det/projects/1/experiments")
        await page.get_by_role("button", name="Add condition").click()
        await page.locator("input[name=col-0]").fill("state")
        await page.locator("input[name=val-0]").fill("STATE_COMPLETED")
        await page.get_by_role("button", name="Add group").click()
        await page.locator("input[name=col-1-0]").fill("hp.dropout")
        await page.locator("select[name=op-1-0]").select_option(">")
        await page.locator("input[name=val-1-0]").fill("0.4")
        await page.get_by_role("button", name="Add condition to group 2").click()
        await page.locator("input[name=col-1-1]").fill("hp.layers")
        await page.locator("input[name=val-1-1]").fill("3")
        assert await page.locator("select[name=conj-1]").input_value() == "or"
        await page.get_by_role("button", name="Apply filter").click()
        nested = sum(
            1
            for i in range(N)
            if webui_seed.state_of(i) == "COMPLETED"
            and (
                webui_seed.layers_of(i) == 3
                or any(webui_seed.dropout_of(i, j) > 0.4 for j in range(PER))
            )
        )
        assert 0 < nested < want
        await wait_until(
            page, f"document.querySelector('#match-count').textContent.startsWith('{nested} ')"
        )
        assert not await axe_violations(page), await axe_violations(page)

        # The experiment page's logs tab shows its first trial's logs.
        await page.goto(f"{m.url}/det/experiments/{exp}")
        await page.wait_for_selector("[data-trial-id]")
        await page.get_by_role("tab", name="logs").click()
        await wait_until(
            page,
            "document.querySelector('#log-lines')?.textContent.includes('hello from the first')",
        )
        assert await page.locator("#logs-trial").input_value() == str(first["id"])
        assert not await axe_violations(page), await axe_violations(page)

        # Parallel coordinates: a brush typed with the keyboard alone, then one dragged.
        by_id = {t["id"]: t for t in trials["trials"]}
        await page.get_by_role("tab", name="hyperparameters").click()
        await page.locator("input[name=brush-dropout-lo]").focus()
        await page.keyboard.type("0.1")
        await page.keyboard.press("Tab")
        await page.keyboard.type("0.4")
        await page.keyboard.press("Tab")
        inside = sorted(i for i, t in by_id.items() if 0.1 <= t["hparams"]["dropout"] <= 0.4)
        assert 0 < len(inside) < PER
        await wait_until(page, f"window.__parcoords.kept.length === {len(inside)}")
        assert sorted(await page.evaluate("window.__parcoords.kept")) == inside
        status = await page.locator("#brush-status").text_content()
        assert status == f"{len(inside)} of {PER} trials in the brushes"
        await page.get_by_role("button", name="Clear brushes").click()
        axis = await page.locator("rect[data-axis=dropout]").bounding_box()
        assert axis is not None
        await page.mouse.move(axis["x"] + 10, axis["y"] + 2)
        await page.mouse.down()
        await page.mouse.move(axis["x"] + 10, axis["y"] + axis["height"] * 0.8, steps=5)
        await page.mouse.up()
        await wait_until(page, "window.__parcoords.brush.dropout !== undefined")
        lo, hi = await page.evaluate("window.__parcoords.brush.dropout")
        dragged = sorted(i for i, t in by_id.items() if lo <= t["hparams"]["dropout"] <= hi)
        assert sorted(await page.evaluate("window.__parcoords.kept")) == dragged
        assert lo < hi and dragged, (lo, hi)
        await page.locator("#scatter-x").select_option("layers")
        await page.get_by_role("heading", name="Scatter: layers against the metric").wait_for()
        assert not await axe_violations(page), await axe_violations(page)

        # The trial's logs: search, level filter, and the download holds every line.
        await page.goto(f"{m.url}/det/experiments/{exp}/trials/{first['id']}")
        await wait_until(
            page, "document.querySelector('#log-lines')?.textContent.includes('an error in the')"
        )
        # Zoom with the keyboard alone: a typed batch range gets every raw point in it.
        training = "window.__charts && window.__charts['trial-training']"
        await wait_until(page, f"{training} && {training}.series.length === 1")
        await page.locator("input[name=trial-training-from]").focus()
        await page.keyboard.type("1000")
        await page.keyboard.press("Tab")
        await page.keyboard.type("1999")
        await page.keyboard.press("Enter")
        await wait_until(page, f"{training}.series[0].x[0] >= 1000")
        xs = await page.evaluate(f"{training}.series[0].x")
        assert xs == list(range(1000, 2000))
        assert not await axe_violations(page), await axe_violations(page)
        await page.get_by_label("Level").select_option("LOG_LEVEL_WARNING")
        await wait_until(
            page, "!document.querySelector('#log-lines').textContent.includes('hello from')"
        )
        assert (await page.locator("#log-lines").text_content() or "").split("\n") == [
            "a warning about the batch size",
            "an error in the loader",
        ]
        await page.get_by_label("Search").fill("loader")
        await wait_until(
            page, "document.querySelector('#log-lines').textContent === 'an error in the loader'"
        )
        async with page.expect_download() as info:
            await page.get_by_role("button", name="Download").click()
        saved = await (await info.value).path()
        assert Path(saved).read_text() == "".join(f"{text}\n" for text, _ in lines)

        # Tasks: the notebook is listed (queued: no agent), and not yet openable.
        await page.goto(f"{m.url}/det/tasks")
        row = page.locator(f"#tasks-notebooks tr[data-task-id='{notebook}']")
        await row.wait_for()
        assert "my notebook" in (await row.text_content() or "")
        assert await row.get_by_text("not running").count() == 1
        assert not await axe_violations(page), await axe_violations(page)
        await browser.close()
