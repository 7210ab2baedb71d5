"""Deleting experiments (api/experiment_deletion.py), with Determined 0.38's routes: DELETE
/api/v1/experiments/{id} (only ended experiments; checkpoint files through the checkpoint GC
path, then the rows), DELETE /api/v1/projects/{id}/experiments/delete (one result each) and
DELETE …/tensorboard-files; owner, another user, an admin, no login and bad input (a task's
token: tests/api/test_task_tokens.py, RBAC: tests/api/test_rbac_routes.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error
from tests.controlplane.api.test_experiment_files_api import other_user
from tests.controlplane.api.test_workspace_deletion import ended_experiment
from tests.controlplane.api.test_workspaces_api import project, workspace


async def _project(m: Master) -> int:
    ws = (await workspace(m, "w"))["id"]
    return (await project(m, ws, "p"))["id"]


async def until_gone(m: Master, exp_id: int) -> None:
    """The master's GC job (woken by the delete) finishes the deletion in the background."""
    for _ in range(400):
        r = await m.client.get(f"/api/v1/experiments/{exp_id}", headers=m.user)
        if r.status_code == 404:
            return
        assert r.json()["experiment"]["state"] == "STATE_DELETED", r.text
        await asyncio.sleep(0.05)
    raise AssertionError(f"experiment {exp_id} is still there")


async def test_an_ended_experiment_goes_with_its_checkpoint_files(
    master: Master, tmp_path: Path
) -> None:
    store = tmp_path / "ckpts"
    p = await _project(master)
    exp_id, ckpt = await ended_experiment(master, p, store)
    kept, kept_ckpt = await ended_experiment(master, p, store)
    r = await master.client.delete(f"/api/v1/experiments/{exp_id}", headers=master.user)
    assert r.status_code == 200 and r.json() == {}, r.text
    await until_gone(master, exp_id)
    assert not (store / ckpt).exists()
    assert_error(await master.client.get(f"/api/v1/checkpoints/{ckpt}", headers=master.user), 404)
    r = await master.client.get(f"/api/v1/experiments/{exp_id}/trials", headers=master.user)
    assert r.status_code == 404
    assert (store / kept_ckpt / "model.txt").exists()
    r = await master.client.get(f"/api/v1/experiments/{kept}", headers=master.user)
    assert r.status_code == 200


async def test_one_without_files_goes_at_once_and_an_admin_may(
    master: Master, tmp_path: Path
) -> None:
    p = await _project(master)
    exp_id, _ = await ended_experiment(master, p, tmp_path / "s", files=False)
    # A checkpoint whose files are already gone still has to be deleted through GC.
    r = await master.client.delete(f"/api/v1/experiments/{exp_id}", headers=master.admin)
    assert r.status_code == 200, r.text
    await until_gone(master, exp_id)


async def test_what_may_not_be_deleted(master: Master, tmp_path: Path) -> None:
    store = tmp_path / "ckpts"
    p = await _project(master)
    running, _ = await ended_experiment(master, p, store, end=False)
    r = await master.client.delete(f"/api/v1/experiments/{running}", headers=master.user)
    assert_error(r, 409, "only ended experiments")
    protected, ckpt = await ended_experiment(master, p, store)
    r = await master.client.put(
        f"/api/v1/checkpoints/{ckpt}/protection", json={"protected": True}, headers=master.user
    )
    assert r.status_code == 200, r.text
    r = await master.client.delete(f"/api/v1/experiments/{protected}", headers=master.user)
    assert_error(r, 409, "protected")
    assert (store / ckpt / "model.txt").exists()
    alice = await other_user(master)
    mine, _ = await ended_experiment(master, p, store)
    r = await master.client.delete(f"/api/v1/experiments/{mine}", headers=alice)
    assert_error(r, 403)
    r = await master.client.delete(f"/api/v1/experiments/{mine}/tensorboard-files", headers=alice)
    assert_error(r, 403)
    c = master.client
    assert (await c.delete(f"/api/v1/experiments/{mine}")).status_code == 401
    assert_error(await c.delete("/api/v1/experiments/999999", headers=master.user), 404)
    assert (await c.delete(f"/api/v1/experiments/{2**40}", headers=master.user)).status_code == 400
    r = await c.get(f"/api/v1/experiments/{mine}", headers=master.user)
    assert r.json()["experiment"]["state"] == "STATE_CANCELED"


async def test_bulk_delete_in_a_project(master: Master, tmp_path: Path) -> None:
    store = tmp_path / "ckpts"
    p = await _project(master)
    ended, _ = await ended_experiment(master, p, store, files=False)
    running, _ = await ended_experiment(master, p, store, end=False)
    path = f"/api/v1/projects/{p}/experiments/delete"
    body = {"experimentIds": [ended, running, 999999], "projectId": p}
    r = await master.client.request("DELETE", path, json=body, headers=master.user)
    assert r.status_code == 200, r.text
    results = {x["id"]: x["error"] for x in r.json()["results"]}
    assert results[ended] == ""
    assert "only ended experiments" in results[running]
    assert "999999" in results[999999]
    await until_gone(master, ended)
    r = await master.client.get(f"/api/v1/experiments/{running}", headers=master.user)
    assert r.status_code == 200
    for bad, status in (
        ({"experimentIds": [running], "projectId": p + 1}, 400),
        ({"experimentIds": "x", "projectId": p}, 400),
        ({"projectId": p}, 400),
    ):
        r = await master.client.request("DELETE", path, json=bad, headers=master.user)
        assert r.status_code == status, (bad, r.text)
    r = await master.client.request("DELETE", path, json=body)
    assert r.status_code == 401


async def test_tensorboard_files(master: Master, tmp_path: Path) -> None:
    store = tmp_path / "ckpts"
    p = await _project(master)
    exp_id, ckpt = await ended_experiment(master, p, store)
    info = (await master.client.get("/info")).json()
    tb = store / info["cluster_id"] / "tensorboard" / "experiment" / str(exp_id)
    (tb / "trial" / "1").mkdir(parents=True)
    (tb / "trial" / "1" / "events.out").write_text("x")
    other = tb.parent / str(exp_id + 1000)
    other.mkdir()
    path = f"/api/v1/experiments/{exp_id}/tensorboard-files"
    r = await master.client.delete(path, headers=master.user)
    assert r.status_code == 200 and r.json() == {}, r.text
    assert not tb.exists() and other.exists()
    assert (store / ckpt / "model.txt").exists()  # checkpoints are not touched
    r = await master.client.delete(path, headers=master.user)  # nothing there: fine
    assert r.status_code == 200, r.text
    r = await master.client.delete("/api/v1/experiments/999999/tensorboard-files",
                                   headers=master.user)  # fmt: skip
    assert_error(r, 404)
