"""Charts a user can read, in Debian's Chromium against a live master at 1,280 px: one metric,
many metrics of different scales (a plot each, a metric picker, a shared axis, log scale, x by
epochs and time), a single validation point drawn as a marker, axes on every plot (the scatter
too), heat-map labels that do not overlap, hyperparameters as a formatted table, the checkpoints'
Trial column, confirmation before archive, and headers that are words; axe-core on each view."""

from __future__ import annotations

import itertools
import os
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert

from controlplane.api.webui import DIST
from controlplane.db.models import Checkpoint, Metric, MetricRollup
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.domain.series_rollup import rollup
from controlplane.services import metric_rollups
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
WIDTH = 1280
TRAINING = "window.__charts && window.__charts['trial-training']"
VALIDATION = "window.__charts && window.__charts['trial-validation']"


def _hparams(i: int, j: int) -> dict:
    # 24 trials: 24 distinct dropouts fall into 8 bins with long labels ("0.0625-0.125"); the
    # float noise of j / 46 must not show.
    return {"lr": (0.1, 0.01, 0.001)[j % 3], "dropout": j / 46, "layers": 1 + j % 4}


async def _reports(url: str, trial_id: int, group: str, rows: list[tuple[int, dict]]) -> None:
    """Metric reports written as the master's ingest writes them (rows and rollups)."""
    engine = make_engine(url)
    try:
        async with transaction(make_sessionmaker(engine)) as s:
            metrics = [
                {
                    "trial_id": trial_id,
                    "trial_run_id": 1,
                    "group": group,
                    "total_batches": step,
                    "end_time": webui_seed.T0 + timedelta(seconds=step),
                    "metrics": {"avg_metrics": values},
                    "archived": False,
                }
                for step, values in rows
            ]
            await s.execute(insert(Metric), metrics)
            items = [(step, values) for step, values in rows]
            await s.execute(
                insert(MetricRollup), metric_rollups.rows(trial_id, group, rollup(items))
            )
    finally:
        await engine.dispose()


async def _checkpoint(url: str, trial_id: int, task_id: str) -> str:
    engine = make_engine(url)
    name = str(uuid.uuid4())
    try:
        async with transaction(make_sessionmaker(engine)) as s:
            await s.execute(
                insert(Checkpoint),
                [
                    {
                        "uuid": name,
                        "task_id": task_id,
                        "trial_id": trial_id,
                        "state": "COMPLETED",
                        "report_time": webui_seed.T0,
                        "resources": {"model.pt": "2048"},
                        "metadata_": {"steps_completed": 100},
                        "steps_completed": 100,
                    }
                ],
            )
    finally:
        await engine.dispose()
    return name


async def _plot(page: Any, panel: str) -> dict:
    """A drawn uPlot's axes and scales as the page holds them (`_splits`: the tick values it
    drew, uPlot 1.6's own field)."""
    return await page.evaluate(
        """(panel) => { const u = window.__plots[panel];
          return { xLabel: u.axes[0].label, yLabel: u.axes[1].label,
            axesShown: u.axes.every(a => a.show !== false),
            x: [u.scales.x.min, u.scales.x.max], y: [u.scales.y.min, u.scales.y.max],
            time: Boolean(u.scales.x.time), distr: u.scales.y.distr,
            xTicks: u.axes[0]._splits }; }""",
        panel,
    )


async def _drawn_at(page: Any, panel: str, x: float, y: float) -> list[int]:
    """The canvas's RGBA where the plot places (x, y): a marker there is not transparent."""
    return await page.evaluate(
        """([panel, x, y]) => { const u = window.__plots[panel];
          const cx = Math.round(u.valToPos(x, 'x', true));
          const cy = Math.round(u.valToPos(y, 'y', true));
          const d = u.ctx.getImageData(cx - 1, cy - 1, 3, 3).data;
          return [Math.max(...[0, 4, 8, 12, 16, 20, 24, 28, 32].map(i => d[i + 3])), cx, cy]; }""",
        [panel, x, y],
    )


def _shots(tmp_path: Path) -> Path:
    # CI keeps RESOLUTE_TEST_ARTIFACTS as build artifacts; locally they stay in the tmp dir.
    out = Path(os.environ.get("RESOLUTE_TEST_ARTIFACTS", tmp_path)) / "chart-screenshots"
    out.mkdir(parents=True, exist_ok=True)
    return out


# Light pixels in the plot's left axis (its tick values and label).
_LIGHT_INK = """(panel) => { const u = window.__plots[panel];
  const d = u.ctx.getImageData(0, 0, Math.round(u.bbox.left), u.ctx.canvas.height).data;
  let n = 0;
  // Brighter than either theme's grid lines (#c8c8c8, #444): the dark theme's ink (#e8e8e8).
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3] > 128 && d[i] > 215 && d[i + 1] > 215 && d[i + 2] > 215) n++;
  }
  return n; }"""


async def _fits(page: Any) -> int:
    return await page.evaluate("document.documentElement.scrollWidth")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_charts_a_user_can_read(
    start_master: StartMaster, db_url: str, tmp_path: Path
) -> None:
    m = await start_master()
    await m.post("/api/v1/users", {"user": {"username": "alice"}, "password": PASSWORD})
    alice = await m.login("alice", PASSWORD)
    me = (await m.http.get("/api/v1/me", headers=alice)).json()["user"]["id"]
    seeded = await webui_seed.seed(
        db_url, owner_id=me, experiments=1, trials_per=24, prefix="charts", hparams_of=_hparams
    )
    exp = seeded.experiment_ids[0]
    one, many = seeded.trial_ids[:2]
    # One metric; and four of very different scales, with epochs.
    await _reports(db_url, one, "training", [(s, {"loss": 1 / s}) for s in range(1, 51)])
    await _reports(
        db_url,
        many,
        "training",
        [
            (
                s * 10,
                {
                    "loss": 1 / s,
                    "accuracy": s / 40,
                    "batches": 100 + s * 10,
                    "lr": 1e-5 * s,
                    "epoch": s / 10,
                },
            )
            for s in range(1, 31)
        ],
    )
    r = await m.http.get(f"/api/v1/trials/{one}", headers=alice)
    task_id = r.json()["trial"]["taskId"]
    ckpt = await _checkpoint(db_url, one, task_id)
    r = await m.http.get(f"/api/v1/trials/{one}/checkpoints", headers=alice)
    assert r.json()["checkpoints"][0]["training"]["trialId"] == one
    # The seed's one validation report per trial, at batch 100: a single point.
    r = await m.http.get(
        "/api/v1/trials/time-series",
        params={"trialIds": one, "group": "validation"},
        headers=alice,
    )
    [point] = r.json()["trials"][0]["metrics"][0]["data"]
    single = point["values"]["validation_loss"]

    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = await browser.new_page(viewport={"width": WIDTH, "height": 900})
        await login(page, m.url, "alice")

        # The experiment list's headers are words, not the API's camelCase.
        await page.goto(f"{m.url}/det/projects/1/experiments")
        await page.wait_for_selector(".grid-body [role=row]")
        headers = await page.locator(".grid-head [role=columnheader]").all_text_contents()
        assert {"ID", "Name", "State", "Searcher", "Trials", "Start time"} <= set(headers)
        assert not [h for h in headers if any(c.isupper() for c in h[1:]) and h != "ID"]
        assert await _fits(page) <= WIDTH

        # One metric: one plot, both axes labelled, every point there.
        await page.goto(f"{m.url}/det/experiments/{exp}/trials/{one}")
        await wait_until(page, f"{TRAINING} && {VALIDATION}")
        chart = await page.evaluate(TRAINING)
        assert chart["labels"] == [f"trial {one} loss"]
        assert chart["series"][0]["x"] == list(range(1, 51))
        assert [(q["key"], q["xLabel"], q["yLabel"]) for q in chart["panels"]] == [
            ("loss", "Batches", "loss")
        ]
        plot = await _plot(page, "trial-training:loss")
        assert (plot["xLabel"], plot["yLabel"], plot["axesShown"]) == ("Batches", "loss", True)
        assert plot["y"][0] <= 1 / 50 and plot["y"][1] >= 1
        # (uPlot's drawn tick values) Batches are whole numbers on the axis too.
        assert len(plot["xTicks"]) >= 3 and all(t == int(t) for t in plot["xTicks"])

        # A single validation point: inside both scales, and drawn (the canvas is not empty
        # there; a line of one point draws nothing).
        chart = await page.evaluate(VALIDATION)
        assert chart["series"] == [{"x": [100], "y": [single]}]
        plot = await _plot(page, "trial-validation:validation_loss")
        assert plot["x"][0] < 100 < plot["x"][1]
        assert plot["y"][0] < single < plot["y"][1]
        await page.screenshot(path=str(_shots(tmp_path) / "one-metric.png"), full_page=True)
        alpha, *_ = await _drawn_at(page, "trial-validation:validation_loss", 100, single)
        assert alpha > 0, "the single validation point is not drawn"
        assert await _fits(page) <= WIDTH
        assert not await axe_violations(page), await axe_violations(page)

        # Many metrics of different scales: a plot each, so batches (110-400) leaves the loss
        # (0.03-1) its own axis.
        await page.goto(f"{m.url}/det/experiments/{exp}/trials/{many}")
        await wait_until(page, f"{TRAINING} && {TRAINING}.panels.length === 4")
        chart = await page.evaluate(TRAINING)
        assert [q["key"] for q in chart["panels"]] == ["accuracy", "batches", "loss", "lr"]
        loss = await _plot(page, "trial-training:loss")
        assert loss["y"][1] < 2, "the loss is drawn on its own scale"
        lr = await _plot(page, "trial-training:lr")
        assert lr["y"][1] < 1e-3
        boxes = await page.locator("[data-chart=trial-training] [data-panel]").evaluate_all(
            "ps => ps.map(p => p.getBoundingClientRect().right)"
        )
        assert len(boxes) == 4 and max(boxes) <= WIDTH
        await page.screenshot(path=str(_shots(tmp_path) / "many-metrics.png"), full_page=True)
        # The picker: without batches, three plots.
        picker = page.locator("[data-chart=trial-training] .metric-picker")
        await picker.get_by_label("batches").uncheck()
        await wait_until(page, f"{TRAINING}.panels.length === 3")
        assert f"trial {many} batches" not in (await page.evaluate(TRAINING))["labels"]
        # All on one axis, then log scale: the axis spans 1e-5 to 400 and is logarithmic.
        await picker.get_by_label("batches").check()
        await page.locator("select[name=trial-training-layout]").select_option("shared")
        await wait_until(page, f"{TRAINING}.panels.length === 1 && {TRAINING}.layout === 'shared'")
        shared = await _plot(page, "trial-training:all")
        assert shared["y"][1] >= 400 and shared["distr"] == 1
        await page.locator("input[name=trial-training-log]").check()
        await wait_until(page, f"{TRAINING}.log === true")
        logged = await _plot(page, "trial-training:all")
        assert logged["distr"] == 3 and 0 < logged["y"][0] <= 1e-5
        # x by epochs, then by time.
        await page.locator("select[name=trial-training-x]").select_option("epochs")
        await wait_until(page, f"{TRAINING}.x === 'epochs'")
        chart = await page.evaluate(TRAINING)
        assert chart["series"][0]["x"] == pytest.approx([s / 10 for s in range(1, 31)])
        assert (await _plot(page, "trial-training:all"))["xLabel"] == "Epochs"
        await page.locator("select[name=trial-training-x]").select_option("time")
        await wait_until(page, f"{TRAINING}.x === 'time'")
        timed = await _plot(page, "trial-training:all")
        assert timed["time"] and timed["xLabel"] == "Time"
        t0 = webui_seed.T0.timestamp()
        assert (await page.evaluate(TRAINING))["series"][0]["x"][0] == t0 + 10
        assert await _fits(page) <= WIDTH
        assert not await axe_violations(page), await axe_violations(page)

        # The dark theme: the plots' titles, legends and controls keep their contrast.
        await page.get_by_role("button", name="Dark theme").click()
        await wait_until(page, "document.documentElement.dataset.theme === 'dark'")
        # The axis values are redrawn in the dark theme's light ink (a canvas keeps the colour
        # it was drawn with unless redrawn; read before the
        # screenshot, whose resize redraws every plot anyway).
        assert await page.evaluate(_LIGHT_INK, "trial-training:all") > 50
        await page.screenshot(path=str(_shots(tmp_path) / "many-metrics-dark.png"), full_page=True)
        assert not await axe_violations(page), await axe_violations(page)
        await page.get_by_role("button", name="Dark theme").click()

        # The hyperparameters: a table with formatted numbers (j / 46 for j = 3 is
        # 0.06521739130434782), no JSON.
        await page.goto(f"{m.url}/det/experiments/{exp}/trials/{seeded.trial_ids[3]}")
        row = page.locator("tr", has=page.get_by_role("rowheader", name="dropout", exact=True))
        await row.first.wait_for()
        assert (await row.first.locator("td").text_content()) == "0.06522"

        # The experiment: hyperparameter columns in the trials table, formatted.
        await page.goto(f"{m.url}/det/experiments/{exp}")
        await page.wait_for_selector("[data-trial-id]")
        cells = await page.locator("td[data-hp=dropout]").all_text_contents()
        assert "0.06522" in cells and not [c for c in cells if len(c) > 7]
        assert await _fits(page) <= WIDTH

        # The scatter has axes: ticks with values, and both axis names.
        await page.get_by_role("tab", name="hyperparameters").click()
        await page.wait_for_selector("#scatter")
        await page.locator("#scatter-x").select_option("lr")
        await wait_until(page, "window.__scatter && window.__scatter.x === 'lr'")
        scatter = await page.evaluate("window.__scatter")
        assert scatter["logX"] and scatter["xTicks"] == [0.001, 0.01, 0.1]
        assert await page.locator("#scatter .tick-x text").all_text_contents() == [
            "0.001",
            "0.01",
            "0.1",
        ]
        assert len(await page.locator("#scatter .tick-y").all()) >= 2
        assert await page.locator("#scatter .axis-title").all_text_contents() == [
            "lr (log scale)",
            "validation_loss",
        ]
        await page.screenshot(path=str(_shots(tmp_path) / "hyperparameters.png"), full_page=True)
        # The heat map's labels do not overlap, along either axis.
        await page.locator("#heat-x").select_option("dropout")
        await page.locator("#heat-y").select_option("lr")
        await wait_until(page, "window.__heatmap.x === 'dropout' && window.__heatmap.y === 'lr'")
        for cls, lo, hi in (("heat-x-label", "left", "right"), ("heat-y-label", "top", "bottom")):
            spans = await page.locator(f"#heat-svg .{cls}").evaluate_all(
                "ts => ts.map(t => { const b = t.getBoundingClientRect(); "
                f"return [b.{lo}, b.{hi}]; }})"
            )
            spans.sort()
            assert len(spans) >= 3
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), spans
        assert await _fits(page) <= WIDTH
        assert not await axe_violations(page), await axe_violations(page)

        # Checkpoints: the Trial column says which trial wrote each.
        await page.get_by_role("tab", name="checkpoints").click()
        row = page.locator(f"tr[data-uuid='{ckpt}']")
        await row.wait_for()
        assert (await row.locator("[data-col=trial]").text_content()) == str(one)

        # Archive asks first; Cancel leaves the experiment as it was.
        await page.locator("button[data-action=archive]").click()
        dialog = page.get_by_role("dialog", name=f"Archive experiment {exp}")
        await dialog.wait_for()
        assert f"Archive experiment {exp}" in (await dialog.text_content() or "")
        assert not await axe_violations(page), await axe_violations(page)
        await dialog.get_by_role("button", name="Cancel").click()
        await dialog.wait_for(state="detached")
        r = await m.http.get(f"/api/v1/experiments/{exp}", headers=alice)
        assert r.json()["experiment"]["archived"] is False
        await page.locator("button[data-action=archive]").click()
        await dialog.get_by_role("button", name=f"Archive experiment {exp}").click()
        await dialog.wait_for(state="detached")
        r = await m.http.get(f"/api/v1/experiments/{exp}", headers=alice)
        assert r.json()["experiment"]["archived"] is True

        # Compare: hyperparameters formatted, differences found on the exact values; the
        # curves a plot per metric, each trial in its own colour.
        a, b = seeded.trial_ids[3], seeded.trial_ids[4]
        await page.goto(f"{m.url}/det/compare?trials={a},{b}")
        row = page.locator("#hparam-diff tr[data-key=dropout]")
        await row.wait_for()
        assert await row.locator("td").all_text_contents() == ["0.06522", "0.08696"]
        assert "differs" in (await row.get_attribute("class") or "")
        await wait_until(page, "window.__charts && window.__charts['compare-training']")
        chart = await page.evaluate("window.__charts['compare-training']")
        assert chart["panels"] == [] and chart["labels"] == []
        await wait_until(page, "window.__charts['compare-validation']")
        chart = await page.evaluate("window.__charts['compare-validation']")
        assert [q["key"] for q in chart["panels"]] == ["validation_loss"]
        assert chart["panels"][0]["lines"] == [
            f"trial {a} validation_loss",
            f"trial {b} validation_loss",
        ]
        assert await _fits(page) <= WIDTH
        assert not await axe_violations(page), await axe_violations(page)

        # The cluster page fits too.
        await page.goto(f"{m.url}/det/clusters")
        await page.wait_for_selector("#cluster-title")
        assert await _fits(page) <= WIDTH
        await browser.close()


# The element that sticks out furthest to the right, for the failure message.
_WIDEST = """() => { let worst = null, right = 0;
  for (const el of document.querySelectorAll('main *')) {
    const r = el.getBoundingClientRect().right;
    if (r > right) { right = r; worst = el; }
  }
  return worst ? `${worst.tagName}.${worst.className} ${Math.round(right)}px: `
    + worst.outerHTML.slice(0, 160) : ''; }"""


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_the_cluster_and_queue_fit_1280_px(
    start_master: StartMaster, db_url: str, tmp_path: Path
) -> None:
    """A queue with long names and a job to reorder against (the page was 1,718 px wide in a
    1,400 px window): nothing is wider than the window."""
    from tests.controlplane.services.scheduling.conftest import experiment_yaml

    m = await start_master()
    await m.post("/api/v1/users", {"user": {"username": "alice"}, "password": PASSWORD})
    alice = await m.login("alice", PASSWORD)
    for name in ("a-rather-long-experiment-name-for-the-queue", "b-another-long-name-in-the-queue"):
        r = await m.http.post(
            "/api/v1/experiments",
            json={"config": experiment_yaml(name), "activate": True},
            headers=alice,
        )
        assert r.status_code == 200, r.text
    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = await browser.new_page(viewport={"width": WIDTH, "height": 900})
        await login(page, m.url, "alice")
        for path, ready in (
            ("/det/clusters", "tr[data-job-id]"),
            ("/det/jobs", "tr[data-job-id]"),
            ("/det/projects/1/experiments", ".grid-body [role=row]"),
            ("/det/tasks", "#tasks-title"),
        ):
            await page.goto(f"{m.url}{path}")
            await page.wait_for_selector(ready)
            await page.screenshot(
                path=str(_shots(tmp_path) / f"{path.strip('/').replace('/', '-')}.png")
            )
            assert await _fits(page) <= WIDTH, (path, await page.evaluate(_WIDEST))
        await browser.close()
