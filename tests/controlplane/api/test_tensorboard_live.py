"""A TensorBoard through the master's proxy serves the scalars a trial reported: a real trial
(process runtime) writes its metrics as event files to shared_fs checkpoint storage, and
`/proxy/{id}/data/plugin/scalars/…` of the TensorBoard task answers with them. It is killed
after `idle_timeout` without requests, with the reason in its logs."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.services.auth import client_hash
from tests.agent.test_end_to_end import Processes
from tests.conftest import PASSWORD
from tests.support import interactive_cluster
from tests.support.interactive_cluster import login, start_cluster
from tests.support.live_master import eventually
from tests.webui.browser import CHROMIUM, FLAGS

pytest.importorskip("tensorboard")
pytestmark = pytest.mark.slow
procs = interactive_cluster.procs

SCRIPT = """\
from harness import core
with core.init() as ctx:
    for step, loss in ((1, 0.5), (2, 0.25), (3, 0.125)):
        ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": loss})
    ctx.train.report_validation_metrics(steps_completed=3, metrics={"loss": 0.2})
"""


async def _shows_in_chromium(port: int, task_id: str, run: str) -> None:
    """TensorBoard's page, opened as the web UI's user opens it, works at the task's origin."""
    from playwright.async_api import async_playwright

    main = f"http://localhost:{port}"
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        context = await browser.new_context()
        body = {"username": "admin", "password": client_hash(PASSWORD), "isHashed": True}
        r = await context.request.post(
            f"{main}/api/v1/auth/login", data=body, headers={"X-Resolute-CSRF": "1", "Origin": main}
        )
        assert r.ok, await r.text()
        page = await context.new_page()
        await page.goto(f"{main}/proxy/{task_id}/")
        assert page.url.startswith(f"http://{task_id}.localhost:{port}/proxy/{task_id}/")
        await page.get_by_text(run).first.wait_for(timeout=60_000)
        await browser.close()


def v1file(name: str, text: str) -> dict[str, Any]:
    content = base64.b64encode(text.encode()).decode()
    return {"path": name, "type": 48, "content": content, "mtime": "0", "mode": 0o644}


async def test_tensorboard_serves_a_trials_scalars(procs: Processes, tmp_path: Path) -> None:
    port = await start_cluster(procs, tmp_path)
    storage = tmp_path / "ckpt"
    storage.mkdir()
    storage.chmod(0o1777)  # the trial runs as its owner's Unix user
    config = (
        "name: tb\nentrypoint: python3 report.py\nsearcher: {name: single, metric: loss, "
        "max_length: 3}\nresources: {slots_per_trial: 0}\n"
        f"checkpoint_storage: {{type: shared_fs, host_path: {storage}}}\n"
    )
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
        admin = await login(c, "admin", PASSWORD)
        body = {"config": config, "modelDefinition": [v1file("report.py", SCRIPT)]}
        r = await c.post("/api/v1/experiments", json=body, headers=admin)
        assert r.status_code == 200, r.text
        exp_id = r.json()["experiment"]["id"]

        async def completed() -> bool:
            exp = (await c.get(f"/api/v1/experiments/{exp_id}", headers=admin)).json()
            assert exp["experiment"]["state"] not in ("STATE_ERROR", "STATE_CANCELED"), exp
            return exp["experiment"]["state"] == "STATE_COMPLETED"

        await eventually(completed, timeout=120, interval=0.5)
        trial_id = (await c.get(f"/api/v1/experiments/{exp_id}/trials", headers=admin)).json()[
            "trials"
        ][0]["id"]

        body = {"experimentIds": [exp_id], "config": {"idle_timeout": "15s"}}
        r = await c.post("/api/v1/tensorboards", json=body, headers=admin)
        assert r.status_code == 200, r.text
        tb = r.json()["tensorboard"]
        assert tb["experimentIds"] == [exp_id] and tb["serviceAddress"] == f"/proxy/{tb['id']}/"

        async def ready() -> bool:
            task = (await c.get(f"/api/v1/tasks/{tb['id']}", headers=admin)).json()["task"]
            assert task.get("endTime") is None, task
            return bool(task["allocations"]) and task["allocations"][0]["isReady"]

        await eventually(ready, timeout=120, interval=0.5)
        prefix = f"/proxy/{tb['id']}/data/plugin/scalars"
        run = f"trial_{trial_id}"

        async def scalars() -> list[Any] | None:
            tags = (await c.get(f"{prefix}/tags", headers=admin)).json()
            if run not in tags or "Determined/loss" not in tags[run]:
                return None
            params = {"run": run, "tag": "Determined/loss"}
            return (await c.get(f"{prefix}/scalars", params=params, headers=admin)).json()

        points = await eventually(scalars, timeout=60, interval=1)
        assert [(p[1], p[2]) for p in points] == [(1, 0.5), (2, 0.25), (3, 0.125)]
        if Path(CHROMIUM).exists():
            await _shows_in_chromium(port, tb["id"], run)

        async def ended() -> bool:
            got = (await c.get(f"/api/v1/tensorboards/{tb['id']}", headers=admin)).json()
            return got["tensorboard"]["state"] == "STATE_TERMINATED"

        await eventually(ended, timeout=90, interval=1)
        logs = (await c.get(f"/api/v1/tasks/{tb['id']}/logs", headers=admin)).text
        assert "TensorBoard received no requests for" in logs


async def test_tensorboard_mirrors_event_files_from_s3(
    procs: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Event files in S3 (moto, through the real boto3) are copied into the task and served."""
    import boto3

    from harness.core._tensorboard import MetricWriter, sync_path
    from tests.support.moto_server import fresh_moto

    endpoint = fresh_moto(monkeypatch).endpoint
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="tb-events")
    port = await start_cluster(procs, tmp_path)
    storage = (
        f"{{type: s3, bucket: tb-events, prefix: runs, endpoint_url: '{endpoint}', "
        "access_key: testing, secret_key: testing}"
    )
    config = (
        "name: tb-s3\nentrypoint: python3 report.py\nsearcher: {name: single, metric: loss, "
        f"max_length: 3}}\nresources: {{slots_per_trial: 0}}\ncheckpoint_storage: {storage}\n"
    )
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
        admin = await login(c, "admin", PASSWORD)
        body = {"config": config, "activate": False}
        r = await c.post("/api/v1/experiments", json=body, headers=admin)
        assert r.status_code == 200, r.text
        exp_id = r.json()["experiment"]["id"]
        trials = (await c.get(f"/api/v1/experiments/{exp_id}/trials", headers=admin)).json()
        trial_id = trials["trials"][0]["id"]
        cluster_id = (await c.get("/api/v1/master", headers=admin)).json()["clusterId"]
        # what the harness writes and uploads for this trial
        MetricWriter(tmp_path / "events")._add(
            [("Determined/loss", 0.5, 1), ("Determined/loss", 0.25, 2)]
        )
        (event_file,) = (tmp_path / "events").iterdir()
        key = f"runs/{sync_path(cluster_id, exp_id, trial_id)}/{event_file.name}"
        boto3.client("s3", endpoint_url=endpoint).upload_file(str(event_file), "tb-events", key)

        r = await c.post("/api/v1/tensorboards", json={"trialIds": [trial_id]}, headers=admin)
        assert r.status_code == 200, r.text
        tb = r.json()["tensorboard"]

        async def ready() -> bool:
            task = (await c.get(f"/api/v1/tasks/{tb['id']}", headers=admin)).json()["task"]
            assert task.get("endTime") is None, task
            return bool(task["allocations"]) and task["allocations"][0]["isReady"]

        await eventually(ready, timeout=120, interval=0.5)
        prefix = f"/proxy/{tb['id']}/data/plugin/scalars"

        async def scalars() -> list[Any] | None:
            params = {"run": f"trial_{trial_id}", "tag": "Determined/loss"}
            r = await c.get(f"{prefix}/scalars", params=params, headers=admin)
            return r.json() if r.status_code == 200 else None

        points = await eventually(scalars, timeout=60, interval=1)
        assert [(p[1], p[2]) for p in points] == [(1, 0.5), (2, 0.25)]
