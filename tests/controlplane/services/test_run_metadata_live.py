"""Run metadata, alerts and the run storage id, as the harness Core API uses them (live master).

Determined 0.38.1: POST /api/v1/runs/{id}/metadata merges (nested objects key by key) and answers
the merged metadata; GET answers it; POST /api/v1/webhooks/custom (Context.alert) answers 200.
We have no webhooks, so an alert is a line of the trial's task log.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

import harness as det
from controlplane.services.run_metadata import MAX_METADATA_BYTES
from tests.conftest import PASSWORD
from tests.harness.live import REPO, place_trial, task_env, task_logs
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, StartMaster

pytestmark = pytest.mark.slow

CONFIG = """
name: run-metadata
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: 10, smaller_is_better: true}
checkpoint_storage: {type: shared_fs, host_path: HOST}
resources: {slots_per_trial: 1}
max_restarts: 0
"""
TOKEN = "grpc-metadata-x-allocation-token"


def _task(token: str) -> dict[str, str]:
    return {TOKEN: f"Bearer {token}"}


async def _trial(m: LiveMaster, exp_id: int) -> dict[str, Any]:
    return (await m.get(f"/api/v1/experiments/{exp_id}/trials"))["trials"][0]


def _use_env(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("DET_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith("DET_"):
            monkeypatch.setenv(key, value)


def _core_calls(ctx: det.core.Context) -> dict[str, Any]:
    first = ctx.train.set_metadata({"a": 1, "nested": {"x": 1}})
    second = ctx.train.set_metadata({"b": "two", "nested": {"y": [1, 2]}})
    got = ctx.train.get_metadata()
    ctx.alert(title="loss diverged", description="loss is NaN at step 7", level="warn")
    ctx.alert(title="just so you know")
    return {"first": first, "second": second, "got": got}


async def test_metadata_alert_and_storage_id(
    start_master: StartMaster,
    agents: list[FakeAgent],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = await start_master()
    config = CONFIG.replace("HOST", str(tmp_path / "ckpt"))
    exp, start, _ = await place_trial(m, agents, config, {"train.py": b"pass\n"})
    other_exp, other_start, _ = await place_trial(m, agents, config, {"train.py": b"pass\n"})
    trial = await _trial(m, exp["id"])
    tid = trial["id"]
    mine = _task(start.spec.environment["DET_SESSION_TOKEN"])
    theirs = _task(other_start.spec.environment["DET_SESSION_TOKEN"])
    url = f"/api/v1/runs/{tid}/metadata"

    # Nothing set yet: an empty object, for the task and for a user alike.
    for headers in (mine, m.admin):
        r = await m.http.get(url, headers=headers)
        assert r.status_code == 200 and r.json() == {"metadata": {}}, r.text

    # The harness Core API against it, in this process (off the loop the master serves from).
    env = task_env(m, start, tmp_path / "work")
    _use_env(env, monkeypatch)
    # Not started: the preemption watcher's 60 s long poll would hold up the master's shutdown.
    ctx = await asyncio.to_thread(det.core.init, tensorboard_mode=det.core.TensorboardMode.MANUAL)
    try:
        out = await asyncio.to_thread(_core_calls, ctx)
    finally:
        await asyncio.to_thread(ctx.close)
    merged = {"a": 1, "b": "two", "nested": {"x": 1, "y": [1, 2]}}
    assert out == {"first": {"a": 1, "nested": {"x": 1}}, "second": merged, "got": merged}
    assert (await m.get(url))["metadata"] == merged

    lines = [e for e in await task_logs(m, trial["taskId"]) if "[alert]" in e["log"]]
    assert [(e["log"], e["level"]) for e in lines] == [
        ("[alert] loss diverged: loss is NaN at step 7", "LOG_LEVEL_WARNING"),
        ("[alert] just so you know", "LOG_LEVEL_INFO"),
    ]

    # runs/start gives a stable int storage id; checkpoint reports carry it back unrefused.
    body = {"runId": tid, "checkpointStorage": {"type": "shared_fs", "host_path": "/x"}}
    r = await m.http.post("/api/v1/runs/start", json=body, headers=mine)
    assert r.status_code == 200 and r.json() == {"storageId": exp["id"]}, r.text
    r = await m.http.post("/api/v1/runs/start", json=body, headers=mine)
    assert r.json() == {"storageId": exp["id"]}
    ckpt = {
        "uuid": "7b3c6f0e-0000-4000-8000-000000000001",
        "state": "STATE_COMPLETED",
        "resources": {"w.txt": "7"},
        "metadata": {"steps_completed": 10},
        "training": {"trialId": tid, "experimentId": exp["id"]},
        "taskId": trial["taskId"],
        "storageId": exp["id"],
    }
    r = await m.http.post("/api/v1/checkpoints", json=ckpt, headers=mine)
    assert r.status_code == 200, r.text
    got = (await m.get(f"/api/v1/checkpoints/{ckpt['uuid']}"))["checkpoint"]
    assert got["storageId"] == exp["id"]

    # Bad input: each is refused with a clear error and changes nothing.
    async def refused(
        method: str, path: str, headers: dict[str, str], json: Any, status: int, text: str
    ) -> None:
        r = await m.http.request(method, path, headers=headers, json=json)
        assert r.status_code == status, (path, json if not isinstance(json, dict) else "", r.text)
        assert text in r.text, r.text

    for bad in ([1, 2], "text", 3, None, True):
        await refused("POST", url, mine, {"metadata": bad}, 400, "must be a JSON object")
    await refused("POST", url, mine, {}, 400, "metadata")
    await refused("POST", url, mine, {"metadata": {"a": 1}, "runId": tid + 1}, 400, "runId")
    await refused("POST", url, mine, {"metadata": {"s": "a\x00b"}}, 400, "NUL")
    big = {"blob": "x" * MAX_METADATA_BYTES}
    await refused("POST", url, mine, {"metadata": big}, 400, str(MAX_METADATA_BYTES))
    # The bound holds for the merged result: two halves that fit alone do not fit together.
    half = "y" * (MAX_METADATA_BYTES // 2 + 16)
    r = await m.http.post(url, headers=mine, json={"metadata": {"h1": half}})
    assert r.status_code == 200, r.text
    await refused("POST", url, mine, {"metadata": {"h2": half}}, 400, "bytes of JSON")
    r = await m.http.post(url, headers=mine, json={"metadata": {"h1": None}})
    assert r.json()["metadata"] == {**merged, "h1": None}

    for method, body in (("GET", None), ("POST", {"metadata": {"z": 1}})):
        await refused(method, "/api/v1/runs/999999/metadata", m.admin, body, 404, "not found")
        await refused(method, url, theirs, body, 403, f"trial {tid}")
        await refused(method, url, _task("not-a-token"), body, 401, "token")
        await refused(method, url, {}, body, 401, "authentication")
    alert = {"data": {"title": "t", "level": "LOG_LEVEL_INFO"}, "experimentId": exp["id"]}
    path = "/api/v1/webhooks/custom"
    await refused("POST", path, mine, {**alert, "trialId": 999999}, 404, "not found")
    await refused("POST", path, theirs, {**alert, "trialId": tid}, 403, f"trial {tid}")
    await refused("POST", path, _task("nope"), {**alert, "trialId": tid}, 401, "token")
    await refused("POST", path, mine, alert, 400, "trialId")
    wrong_exp = {**alert, "trialId": tid, "experimentId": other_exp["id"]}
    await refused("POST", path, mine, wrong_exp, 400, "belongs to experiment")
    bad_level = {**alert, "trialId": tid, "data": {"title": "t", "level": "LOUD"}}
    await refused("POST", path, mine, bad_level, 400, "LOUD")

    assert (await m.get(url))["metadata"] == {**merged, "h1": None}
    assert len([e for e in await task_logs(m, trial["taskId"]) if "[alert]" in e["log"]]) == 2
    # A user may read any experiment's run metadata; only the owner or an admin may write it.
    user = await m.login("determined", PASSWORD)
    r = await m.http.get(url, headers=user)
    assert r.status_code == 200 and r.json()["metadata"] == {**merged, "h1": None}
    await refused("POST", url, user, {"metadata": {"z": 1}}, 403, "owner")
    r = await m.http.post(url, headers=m.admin, json={"metadata": {"nested": {"x": {"deep": 1}}}})
    assert r.status_code == 200 and r.json()["metadata"]["nested"] == {
        "x": {"deep": 1},
        "y": [1, 2],
    }


DET_SCRIPT = r"""
import json
import determined as det
from determined import core, _info
info = det.ClusterInfo._from_env(); info._trial_info = det.TrialInfo._from_env()
info._rendezvous_info = det.RendezvousInfo(["127.0.0.1"], 0, [1])
info._resources_info = det.ResourcesInfo([])
_info._info = info
with core.init(checkpoint_storage=CKPT, tensorboard_mode=core.TensorboardMode.MANUAL) as ctx:
    first = ctx.train.set_metadata({"a": 1, "nested": {"x": 1}})
    second = ctx.train.set_metadata({"nested": {"y": 2}})
    got = ctx.train.get_metadata()
    ctx.alert(title="from determined", description="d", level="error")
    print("RESULT " + json.dumps({"first": first, "second": second, "got": got}))
"""


async def test_the_real_determined_client(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path
) -> None:
    venv = Path(os.environ.get("DETERMINED_CLIENT_VENV", REPO / ".venv-det"))
    if not (venv / "bin" / "python").exists():
        reason = "the determined==0.38.1 client venv is missing (.ci/run creates .venv-det)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    m = await start_master()
    ckpt = tmp_path / "ckpt"
    exp, start, _ = await place_trial(m, agents, CONFIG.replace("HOST", str(ckpt)), {})
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    env.update(start.spec.environment)
    env.update(DET_MASTER=m.url, DET_CLUSTER_ID="c", DET_AGENT_ID="agent-1", DET_SLOT_IDS="[0]")
    env.update(DET_USER="admin")
    proc = await asyncio.create_subprocess_exec(
        str(venv / "bin" / "python"),
        "-c",
        DET_SCRIPT.replace("CKPT", repr(str(ckpt))),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, (out + err).decode(errors="replace")[-3000:]
    result = json.loads(out.split(b"RESULT ", 1)[1])
    merged = {"a": 1, "nested": {"x": 1, "y": 2}}
    assert result == {"first": {"a": 1, "nested": {"x": 1}}, "second": merged, "got": merged}
    trial = await _trial(m, exp["id"])
    lines = [e for e in await task_logs(m, trial["taskId"]) if "[alert]" in e["log"]]
    assert [(e["log"], e["level"]) for e in lines] == [
        ("[alert] from determined: d", "LOG_LEVEL_ERROR")
    ]
