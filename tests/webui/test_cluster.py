"""The cluster page of a pool with a cloud provider (a fake cloud): its instances with state,
age, market and agent, and the provisioner's recent decisions with their reasons, as the API
gives them; the pool's page with its offers (price, cold or ready); an experiment's cost so far;
axe-core checks the pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controlplane.api.webui import DIST
from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import experiment_yaml
from tests.support.fake_cloud import FakeCloud, FakeProvisioner
from tests.support.live_master import StartMaster, eventually
from tests.webui.browser import CHROMIUM, FLAGS, axe_violations, login

playwright = pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason="no chromium (apt-get install chromium)"
    ),
    pytest.mark.skipif(not (DIST / "index.html").exists(), reason="web UI not built"),
]
PROVIDER = {
    "type": "gcp",
    "project": "proj",
    "zone": "us-central1-a",
    "instance_type": {"machine_type": "n1-standard-8", "gpu_type": "nvidia-tesla-t4", "gpu_num": 2},
    "max_instances": 3,
    "master_url": "http://127.0.0.1:8080",
}


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_cluster_shows_instances_and_why_the_pool_scaled(
    start_master: StartMaster, db_url: str
) -> None:
    cloud = FakeCloud()

    def factory(cfg: Any, pool: str, master_url: str) -> FakeProvisioner:
        return FakeProvisioner(cloud, pool, 2)

    m = await start_master(
        app_options={"provisioner_factory": factory},
        provisioner_interval_s=0.2,
        resource_pools=[{"pool_name": "gpus", "provider": PROVIDER}],
        resource_manager={
            "default_compute_resource_pool": "gpus",
            "default_aux_resource_pool": "gpus",
        },
    )
    await m.post("/api/v1/users", {"user": {"username": "alice"}, "password": PASSWORD})
    alice = await m.login("alice", PASSWORD)
    r = await m.http.post(
        "/api/v1/experiments",
        json={"config": experiment_yaml("e", slots=4, pool="gpus"), "activate": True},
        headers=alice,
    )
    assert r.status_code == 200, r.text

    async def both_listed() -> dict[str, Any]:
        view = await m.get("/api/v1/resource-pools/gpus/provisioner")
        return view if len(view["instances"]) == 2 and view["decisions"] else {}

    view = await eventually(both_listed, timeout=15)
    async with playwright.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        await page.goto(f"{m.url}/det/")
        await page.get_by_label("Username").wait_for()
        assert not await axe_violations(page), ("sign-in page", await axe_violations(page))
        await login(page, m.url, "alice")
        await page.goto(f"{m.url}/det/clusters")
        instances = page.get_by_role("table", name="Instances of gpus")
        for instance in view["instances"]:
            row = instances.locator("tr", has_text=instance["id"])
            await row.wait_for()
            cells = await row.locator("td").all_text_contents()
            assert cells[1] == instance["state"]
            assert cells[3] == ("spot" if instance["spot"] else "on-demand")
            assert cells[4] == "not connected"
        decisions = page.get_by_role("table", name="Why gpus scaled (recent decisions)")
        launched = [d for d in view["decisions"] if d["kind"] == "launched"]
        assert launched
        row = decisions.locator("tr", has_text=launched[0]["reason"]).first
        await row.wait_for()
        assert "launched" in (await row.text_content() or "")
        pools = page.get_by_role("table", name="Resource pools")
        assert "GCP" in (await pools.locator("tr", has_text="gpus").text_content() or "")
        assert not await axe_violations(page), await axe_violations(page)

        # The job's owner changes its priority from its queue row.
        job = r.json()["experiment"]["jobId"]
        row = page.locator(f"tr[data-job-id='{job}']")
        await row.locator("input[name=priority]").fill("7")
        await row.locator("button[data-action=priority]").click()
        await row.locator(".job-msg", has_text="priority:").wait_for()
        msg = await row.locator(".job-msg").text_content()
        queue = (await m.http.get("/api/v1/job-queues-v2", headers=alice)).json()["jobs"]
        (mine,) = [q["full"] for q in queue if q["full"]["jobId"] == job]
        assert msg == "priority: done" and mine["priority"] == 7, (msg, mine)

        # The pool's page: its offers with prices and status, as the provisioner API has them.
        await page.goto(f"{m.url}/det/resourcepool/gpus")
        offers = page.get_by_role("table", name="Offers, best first")
        await offers.wait_for()
        (offer,) = (await m.get("/api/v1/resource-pools/gpus/provisioner"))["offers"]
        row = offers.locator("tr", has_text=offer["instanceType"])
        cells = await row.locator("td").all_text_contents()
        assert cells[1] == offer["location"] and cells[4] == f"{offer['pricePerHour']:.3f}"
        assert not offer["coldUntil"] and cells[5] == "ready"
        assert not await axe_violations(page), await axe_violations(page)
        # The experiment's page says what it cost so far.
        await page.goto(f"{m.url}/det/experiments/{r.json()['experiment']['id']}")
        cost = page.locator("#exp-cost")
        await cost.wait_for()
        assert "Cost so far: $" in (await cost.text_content() or "")
        await browser.close()
