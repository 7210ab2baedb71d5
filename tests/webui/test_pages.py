"""Every top-level page of Determined 0.38's web UI at its URL under /det/, in Debian's Chromium
against a live master: each opened by URL (a bookmark, a link pasted from Slack) renders its page
(never "Loading…" forever), an unknown URL gets the 404 page, each is reached by navigation too,
and axe-core finds no violation on any of them. Then what the pages do: register a checkpoint as
a model version from a trial's checkpoints tab, launch a command from the tasks page, pin a
workspace, switch projects, delete a template only after confirming."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.webui import DIST
from tests.conftest import PASSWORD
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

UUID = "5e1f0c2a-0000-4000-8000-00000000c0de"


async def _world(m: LiveMaster, db_url: str) -> dict[str, Any]:
    """An experiment with two trials, a checkpoint of the first, a model with that checkpoint as
    version 1, a template, a workspace with a project, and a queued command."""
    me = (await m.get("/api/v1/me"))["user"]["id"]
    seeded = await webui_seed.seed(db_url, owner_id=me, experiments=1, trials_per=2, prefix="pg")
    exp, trial = seeded.experiment_ids[0], seeded.trial_ids[0]
    task_id = (await m.get(f"/api/v1/trials/{trial}"))["trial"]["taskId"]
    ckpt = {
        "uuid": UUID,
        "state": "STATE_COMPLETED",
        "resources": {"model.pt": "2048"},
        "metadata": {"steps_completed": 100},
        "training": {"trialId": trial, "experimentId": exp},
        "taskId": task_id,
    }
    await m.post("/api/v1/checkpoints", ckpt)
    # Two periods of the profiler's `cpu` group from two agents, as Determined's harness reports
    # them ({agent: {metric: value}}).
    for n, (a, b) in enumerate(((10.0, 20.0), (30.0, 40.0)), start=1):
        report = {"agent-a": {"cpu_util_simple": a}, "agent-b": {"cpu_util_simple": b}}
        body = {"trialRunId": 1, "stepsCompleted": n, "metrics": {"avgMetrics": report}}
        await m.post(f"/api/v1/trials/{trial}/metrics", {"group": "cpu", "metrics": body})
    model = (await m.post("/api/v1/models", {"name": "digits", "description": "mnist"}))["model"]
    await m.post("/api/v1/models/digits/versions", {"checkpointUuid": UUID, "comment": "first"})
    await m.post("/api/v1/models", {"name": "empty model"})
    await m.post(
        "/api/v1/templates/gpu-small",
        {"name": "gpu-small", "config": {"resources": {"slots": 1}}, "workspaceId": 1},
    )
    ws = (await m.post("/api/v1/workspaces", {"name": "research"}))["workspace"]
    project = (
        await m.post(
            f"/api/v1/workspaces/{ws['id']}/projects", {"name": "vision", "workspaceId": ws["id"]}
        )
    )["project"]
    command = (await m.post("/api/v1/commands", {"config": {"entrypoint": "echo hi"}}))["command"]
    pools = (await m.get("/api/v1/resource-pools"))["resourcePools"]
    return {
        "exp": exp,
        "trial": trial,
        "quiet_trial": seeded.trial_ids[1],
        "model": model["id"],
        "ws": ws["id"],
        "project": project["id"],
        "command": command["id"],
        "pool": pools[0]["name"],
    }


def _routes(w: dict[str, Any]) -> list[tuple[str, str]]:
    """(URL under /det, what the page shows): Determined 0.38's routes and the tabs under them."""
    e, t = w["exp"], w["trial"]
    return [
        ("/dashboard", "#dashboard-title"),
        ("/workspaces", "#workspace-table [data-workspace-id]"),
        (f"/workspaces/{w['ws']}", f"#project-table [data-project-id='{w['project']}']"),
        (f"/workspaces/{w['ws']}/resource-pools", f"#workspace-pools >> text={w['pool']}"),
        (f"/projects/{w['project']}", "#exp-title"),
        ("/projects/1/experiments", ".grid-body [data-exp-id]"),
        (f"/experiments/{e}", "#exp-name"),
        (f"/experiments/{e}/checkpoints", f"#checkpoints tr[data-uuid='{UUID}'] button"),
        (f"/experiments/{e}/trials/{t}", "#trial-state"),
        (f"/experiments/{e}/trials/{t}/overview", "#trial-state"),
        (f"/experiments/{e}/trials/{t}/logs", "#log-lines"),
        (f"/experiments/{e}/trials/{t}/hyperparameters", "#hp-table"),
        (f"/experiments/{e}/trials/{t}/checkpoints", f"tr[data-uuid='{UUID}']"),
        (f"/experiments/{e}/trials/{t}/profiler", "#profiler [data-panel='profiler-cpu']"),
        (f"/experiments/{e}/trials/{w['quiet_trial']}/profiler", "#profiler-empty"),
        (f"/trials/{t}", "#trial-title"),
        (f"/searches/{e}", "#exp-name"),
        ("/models", "#model-table [data-model-id]"),
        (f"/models/{w['model']}", "#version-table [data-version='1']"),
        ("/models/digits", "#version-table [data-version='1']"),
        (f"/models/{w['model']}/versions/1", "#version-title"),
        ("/tasks", "#launch-title"),
        (f"/commands/{w['command']}/logs", "#task-logs-title"),
        ("/jobs", "#cluster-title"),
        ("/clusters", "#cluster-title"),
        ("/clusters/historical-usage", "#usage-chart"),
        (f"/resourcepool/{w['pool']}", "#pool-title"),
        ("/templates", "#template-table [data-template='gpu-small']"),
        ("/webhooks", "#webhooks-title"),
        ("/admin/user-management", "#user-table [data-user='admin']"),
        ("/admin/group-management", "#group-table"),
        ("/admin/roles", "#role-table"),
        ("/admin/audit", "#audit-title"),
        ("/no/such/page", "#not-found-title"),
        ("/experiments/not-a-number", "#not-found-title"),
        ("/models/digits/versions/1/extra/segments", "#not-found-title"),
    ]


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_every_page_by_url_and_by_navigation(start_master: StartMaster, db_url: str) -> None:
    m = await start_master()
    w = await _world(m, db_url)
    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        await login(page, m.url, "admin")

        # By URL: each page renders its own content; none is left at "Loading…".
        first_render: dict[str, float] = {}
        for path, shows in _routes(w):
            started = time.perf_counter()
            await page.goto(f"{m.url}/det{path}")
            await page.locator(shows).first.wait_for()
            first_render[path] = time.perf_counter() - started
            assert await page.locator("main h1").count() >= 1, path
            found = await axe_violations(page)
            assert not found, (path, found)
            # Fits 1,280 px: nothing scrolls sideways.
            width = await page.evaluate("document.documentElement.scrollWidth")
            assert width <= 1280, (path, width)
        # No page threw: an uncaught error would leave a page half drawn.
        assert not [e for e in errors if "Error" in e], errors
        slowest = sorted(first_render.items(), key=lambda kv: -kv[1])[:3]
        print("first render (goto to content), slowest:", [(k, round(v, 3)) for k, v in slowest])

        # The profiler draws a line per agent for each metric of the group, over time.
        await page.goto(f"{m.url}/det/experiments/{w['exp']}/trials/{w['trial']}/profiler")
        await page.locator("[data-panel='profiler-cpu']").wait_for()
        drawn = await page.evaluate(
            "(() => { const u = window.__plots['profiler-cpu'];"
            " return {labels: u.series.slice(1).map((s) => s.label), y: u.data.slice(1)}; })()"
        )
        assert drawn == {
            "labels": ["agent-a cpu_util_simple", "agent-b cpu_util_simple"],
            "y": [[10.0, 30.0], [20.0, 40.0]],
        }

        # Determined's old paths land on their new ones.
        await page.goto(f"{m.url}/det/experiments")
        await page.wait_for_url("**/det/projects/1/experiments")
        await page.goto(f"{m.url}/det/cluster/historical-usage")
        await page.wait_for_url("**/det/clusters/historical-usage")
        await page.locator("#usage-title").wait_for()
        assert await page.title() == "Cluster - Resolute"

        # By navigation, from the header down to the leaves.
        await page.goto(f"{m.url}/det/dashboard")
        nav = page.get_by_role("navigation", name="Main")
        await nav.get_by_role("link", name="Workspaces").click()
        await page.get_by_role("link", name="research").click()
        await page.get_by_role("link", name="vision").click()
        await page.wait_for_url(f"**/det/projects/{w['project']}/experiments")
        crumbs = page.get_by_role("navigation", name="Breadcrumb")
        await crumbs.get_by_role("link", name="research").wait_for()
        assert await crumbs.locator("li").all_inner_texts() == ["Workspaces", "research", "vision"]
        await crumbs.get_by_role("link", name="research").click()
        await page.locator("#workspace-title").wait_for()
        await page.get_by_role("link", name="Resource pools").click()
        await page.wait_for_url(f"**/det/workspaces/{w['ws']}/resource-pools")

        await nav.get_by_role("link", name="Model registry").click()
        await page.get_by_role("link", name="digits").click()
        await page.locator("#version-table").get_by_role("link", name="1").click()
        await page.locator("#version-title").wait_for()
        await page.get_by_role("link", name=f"experiment {w['exp']}, trial {w['trial']}").click()
        await page.locator("#trial-state").wait_for()
        await (
            page.get_by_role("navigation", name="Trial views")
            .get_by_role("link", name="Logs")
            .click()
        )
        await page.wait_for_url(f"**/det/experiments/{w['exp']}/trials/{w['trial']}/logs")
        await page.locator("#log-lines").wait_for()
        await crumbs.get_by_role("link", name=f"Experiment {w['exp']}").click()
        await page.locator("#exp-name").wait_for()

        for label, shows in (
            ("Home", "#dashboard-title"),
            ("Tasks", "#launch-title"),
            ("Templates", "#templates-title"),
            ("Webhooks", "#webhooks-title"),
            ("Cluster and queue", "#cluster-title"),
        ):
            await nav.get_by_role("link", name=label).click()
            await page.locator(shows).wait_for()
            assert await nav.get_by_role("link", name=label).get_attribute("aria-current") == "page"
        pools = page.get_by_role("table", name="Resource pools")
        await pools.get_by_role("link", name=w["pool"]).click()
        await page.locator("#pool-title").wait_for()
        await crumbs.get_by_role("link", name="Cluster").click()
        views = page.get_by_role("navigation", name="Cluster views")
        await views.get_by_role("link", name="Historical usage").click()
        await page.locator("#usage-title").wait_for()
        await nav.get_by_role("link", name="Admin").click()
        admin_tabs = page.get_by_role("navigation", name="Admin views")
        for tab, shows in (
            ("Users", "#user-table"),
            ("Groups", "#group-table"),
            ("Roles", "#role-table"),
        ):
            await admin_tabs.get_by_role("link", name=tab).click()
            await page.locator(shows).wait_for()

        # Back returns to the previous page.
        await page.go_back()
        await page.locator("#group-table").wait_for()

        # Sign out by Determined's URL: the session ends, the sign-in page shows.
        await page.goto(f"{m.url}/det/logout")
        await page.get_by_label("Username").wait_for()
        r = await page.request.get(f"{m.url}/api/v1/me")
        assert r.status == 401
        # A link opened while signed out: the sign-in page, then that page (not the home page).
        await page.goto(f"{m.url}/det/models/digits")
        await page.get_by_label("Username").fill("admin")
        await page.get_by_label("Password").fill(PASSWORD)
        await page.get_by_role("button", name="Sign in").click()
        await page.locator("#version-table [data-version='1']").wait_for()
        assert page.url.endswith("/det/models/digits")
        await browser.close()


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_what_the_pages_do(start_master: StartMaster, db_url: str) -> None:
    m = await start_master()
    w = await _world(m, db_url)
    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        await login(page, m.url, "admin")

        # Register the trial's checkpoint as a version of "empty model" from its checkpoints tab.
        await page.goto(f"{m.url}/det/experiments/{w['exp']}/trials/{w['trial']}/checkpoints")
        row = page.locator(f"tr[data-uuid='{UUID}']")
        assert await row.locator("[data-col=trial]").inner_text() == str(w["trial"])
        await row.get_by_role("button", name=f"Register checkpoint {UUID}").click()
        form = page.get_by_role("form", name="Register a checkpoint")
        await form.get_by_label("Model").select_option("empty model")
        await form.get_by_label("Comment").fill("from the UI")
        await form.get_by_role("button", name="Register checkpoint").click()
        await (
            form.get_by_role("status")
            .filter(has_text="registered as version 1 of empty model")
            .wait_for()
        )
        versions = await m.get("/api/v1/models/empty%20model/versions")
        assert [(v["checkpoint"]["uuid"], v["comment"]) for v in versions["modelVersions"]] == [
            (UUID, "from the UI")
        ]
        assert not await axe_violations(page), await axe_violations(page)

        # Edit a version's comment and labels.
        await page.goto(f"{m.url}/det/models/{w['model']}/versions/1")
        await page.get_by_text("Edit version 1").click()
        edit = page.get_by_role("form", name="Edit version 1")
        await edit.get_by_label("Comment").fill("best so far")
        await edit.get_by_label("Labels (comma separated)").fill("prod, mnist")
        await edit.get_by_role("button", name="Save").click()
        await edit.get_by_role("status").filter(has_text="saved").wait_for()
        version = (await m.get("/api/v1/models/digits/versions/1"))["modelVersion"]
        assert (version["comment"], version["labels"]) == ("best so far", ["prod", "mnist"])
        assert not await axe_violations(page), await axe_violations(page)

        # Launch a command from the tasks page: it is queued and its logs page opens.
        await page.goto(f"{m.url}/det/tasks")
        await page.locator("#launch-kind").select_option("commands")
        launch = page.get_by_role("form", name="Launch a task")
        await launch.get_by_label("Description").fill("from the browser")
        await launch.get_by_role("textbox", name="Command").fill("echo launched")
        await launch.get_by_role("button", name="Launch Command").click()
        await page.locator("#task-logs-title").wait_for()
        launched = page.url.split("/det/commands/")[1].split("/")[0]
        got = (await m.get(f"/api/v1/commands/{launched}"))["command"]
        assert got["description"] == "from the browser"
        # Killing it from the tasks page asks first, then the master ends it.
        await page.goto(f"{m.url}/det/tasks")
        row = page.locator(f"#tasks-commands tr[data-task-id='{launched}']")
        await row.get_by_role("link", name="Logs of from the browser").wait_for()
        await row.get_by_role("button", name="Kill").click()
        await (
            page.get_by_role("dialog", name="Kill from the browser?")
            .get_by_role("button", name="Kill")
            .click()
        )

        async def ended() -> bool:
            state = (await m.get(f"/api/v1/commands/{launched}"))["command"]["state"]
            return state == "STATE_TERMINATED"

        await eventually(ended, timeout=30)
        # A TensorBoard needs experiment ids; a wrong one is refused in words, nothing launched.
        await page.goto(f"{m.url}/det/tasks")
        await page.locator("#launch-kind").select_option("tensorboards")
        await launch.get_by_label("Experiment ids").fill("x")
        await launch.get_by_role("button", name="Launch TensorBoard").click()
        await page.locator("#launch-status").filter(has_text="whole numbers").wait_for()
        assert (await m.get("/api/v1/tensorboards"))["tensorboards"] == []

        # Pin a workspace (the master keeps the caller's pins): it heads the list and appears in
        # the pinned bar, across a reload.
        await page.goto(f"{m.url}/det/workspaces")
        await page.get_by_role("button", name="Pin research").click()
        pins = page.get_by_role("navigation", name="Pinned workspaces")
        await pins.get_by_role("link", name="research").wait_for()
        pinned = (await m.get("/api/v1/workspaces", params={"pinned": "true"}))["workspaces"]
        assert [ws["id"] for ws in pinned] == [w["ws"]]
        await page.reload()
        first = page.locator("#workspace-table tbody tr").first
        await first.get_by_role("button", name="Unpin research").wait_for()
        assert await first.get_attribute("data-workspace-id") == str(w["ws"])
        await pins.get_by_role("link", name="research").click()
        await page.locator("#workspace-title").wait_for()

        # A webhook from the form, on two state triggers, listed with them.
        await page.goto(f"{m.url}/det/webhooks")
        hook = page.get_by_role("form", name="New webhook")
        await hook.get_by_label("Name", exact=True).fill("to-slack")
        await hook.get_by_label("URL", exact=True).fill("http://127.0.0.1:9/hook")
        await hook.get_by_label("Format").select_option("WEBHOOK_TYPE_SLACK")
        await hook.get_by_role("button", name="Create webhook").click()
        await (
            page.locator("#webhook-table tr[data-webhook-id]")
            .filter(has_text="to-slack")
            .wait_for()
        )
        made = (await m.get("/api/v1/webhooks"))["webhooks"]
        assert [(h["name"], h["webhookType"]) for h in made] == [("to-slack", "WEBHOOK_TYPE_SLACK")]
        # Determined's condition names the state bare ("COMPLETED"), as its own UI sends it.
        assert sorted(t["condition"]["state"] for t in made[0]["triggers"]) == [
            "COMPLETED",
            "ERROR",
        ]
        assert not await axe_violations(page), await axe_violations(page)

        # The project switcher opens another project's experiments, and the header follows it.
        await page.goto(f"{m.url}/det/projects/1/experiments")
        await page.locator("#project-switcher").select_option(str(w["project"]))
        await page.wait_for_url(f"**/det/projects/{w['project']}/experiments")
        await wait_until(
            page, "document.querySelector('#match-count')?.textContent.startsWith('0 ')"
        )
        nav = page.get_by_role("navigation", name="Main")
        assert (await nav.get_by_role("link", name="Experiments").get_attribute("href")) == (
            f"/det/projects/{w['project']}/experiments"
        )

        # Deleting a template asks first; Cancel keeps it, confirming deletes it.
        await page.goto(f"{m.url}/det/templates")
        row = page.locator("#template-table [data-template='gpu-small']")
        await row.get_by_role("button", name="Delete").click()
        dialog = page.get_by_role("dialog", name="Delete template gpu-small?")
        await dialog.get_by_role("button", name="Cancel").click()
        assert [t["name"] for t in (await m.get("/api/v1/templates"))["templates"]] == ["gpu-small"]
        await row.get_by_role("button", name="Delete").click()
        await dialog.get_by_role("button", name="Delete template").click()
        await row.wait_for(state="detached")
        assert (await m.get("/api/v1/templates"))["templates"] == []

        # A new template from the form; bad JSON is refused in words.
        await page.get_by_label("Name").fill("cpu")
        await page.get_by_label("Config (JSON)").fill("{not json")
        await page.get_by_role("button", name="Save template").click()
        await page.locator("#template-status").filter(has_text="template cpu:").wait_for()
        await page.get_by_label("Config (JSON)").fill('{"resources": {"slots": 0}}')
        await page.get_by_role("button", name="Save template").click()
        await page.locator("#template-table [data-template='cpu']").wait_for()
        assert not await axe_violations(page), await axe_violations(page)
        await browser.close()
