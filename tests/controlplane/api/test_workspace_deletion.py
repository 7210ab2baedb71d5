"""Deleting a workspace or project with its contents, as Determined 0.38 does (SQLite and
PostgreSQL legs): `completed: false`, DELETING, then gone with its projects, experiments and
their checkpoint files (through the checkpoint GC path); experiments that have not ended,
registered or protected checkpoints and running notebooks refuse it with the reason; a
checkpoint that cannot be deleted leaves DELETE_FAILED with the reason, and deleting again
finishes it; only owners and admins may delete; unknown ids answer 404."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.services.checkpoint_gc import request_deletion
from tests.conftest import PASSWORD, Master
from tests.controlplane.api.test_bad_input import assert_error
from tests.controlplane.api.test_workspaces_api import project, workspace


def _yaml(storage: Path) -> str:
    return "\n".join(
        [
            "name: doomed",
            "entrypoint: python3 train.py",
            "searcher: {name: single, metric: loss, max_length: 10}",
            "resources: {slots_per_trial: 0}",
            f"checkpoint_storage: {{type: shared_fs, host_path: '{storage.parent}', "
            f"storage_path: {storage.name}}}",
        ]
    )


async def ended_experiment(
    m: Master, project_id: int, storage: Path, *, files: bool = True, end: bool = True
) -> tuple[int, str]:
    """An experiment in the project with one checkpoint (its files in `storage`), killed."""
    r = await m.client.post(
        "/api/v1/experiments",
        json={"config": _yaml(storage), "activate": False, "projectId": project_id},
        headers=m.user,
    )
    assert r.status_code == 200, r.text
    exp_id = r.json()["experiment"]["id"]
    r = await m.client.get(f"/api/v1/experiments/{exp_id}/trials", headers=m.user)
    trial_id = r.json()["trials"][0]["id"]
    ckpt = str(uuid.uuid4())
    body = {
        "uuid": ckpt,
        "resources": {"model.txt": "5"},
        "metadata": {"steps_completed": 1},
        "training": {"trialId": trial_id},
    }
    r = await m.client.post("/api/v1/checkpoints", json=body, headers=m.user)
    assert r.status_code == 200, r.text
    if files:
        (storage / ckpt).mkdir(parents=True)
        (storage / ckpt / "model.txt").write_text("model")
    if end:
        r = await m.client.post(f"/api/v1/experiments/{exp_id}/kill", headers=m.user)
        assert r.status_code == 200, r.text
    return exp_id, ckpt


async def until_gone(m: Master, path: str) -> None:
    """The master's own GC job (woken by the delete) finishes the deletion in the background."""
    for _ in range(400):
        r = await m.client.get(path, headers=m.user)
        if r.status_code == 404:
            return
        assert r.json()[path.split("/")[3][:-1]]["state"] == "WORKSPACE_STATE_DELETING", r.text
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} is still there")


async def get(m: Master, path: str) -> Any:
    r = await m.client.get(path, headers=m.user)
    assert r.status_code == 200, r.text
    return r.json()


class TestProjectDeletion:
    async def test_goes_with_its_experiments_and_checkpoint_files(
        self, master: Master, tmp_path: Path
    ) -> None:
        store = tmp_path / "ckpts"
        ws = (await workspace(master, "w"))["id"]
        p = (await project(master, ws, "p"))["id"]
        kept = (await project(master, ws, "kept"))["id"]
        doomed = [await ended_experiment(master, p, store) for _ in range(2)]
        other, other_ckpt = await ended_experiment(master, kept, store)
        r = await master.client.delete(f"/api/v1/projects/{p}", headers=master.user)
        assert r.status_code == 200 and r.json() == {"completed": False}, r.text
        await until_gone(master, f"/api/v1/projects/{p}")
        for exp_id, ckpt in doomed:
            assert not (store / ckpt).exists()
            gone = await master.client.get(f"/api/v1/experiments/{exp_id}", headers=master.user)
            assert_error(gone, 404)
            gone = await master.client.get(f"/api/v1/checkpoints/{ckpt}", headers=master.user)
            assert_error(gone, 404)
        # The rest of the workspace is untouched.
        assert (store / other_ckpt / "model.txt").exists()
        assert (await get(master, f"/api/v1/experiments/{other}"))["experiment"]["id"] == other
        assert (await get(master, f"/api/v1/workspaces/{ws}"))["workspace"]["numProjects"] == 1

    async def test_an_empty_project_goes_at_once(self, master: Master) -> None:
        ws = (await workspace(master, "w"))["id"]
        p = (await project(master, ws, "p"))["id"]
        r = await master.client.delete(f"/api/v1/projects/{p}", headers=master.user)
        assert r.json() == {"completed": True}
        assert_error(await master.client.get(f"/api/v1/projects/{p}", headers=master.user), 404)

    async def test_running_experiments_registered_and_protected_checkpoints_refuse_it(
        self, master: Master, tmp_path: Path
    ) -> None:
        store = tmp_path / "ckpts"
        ws = (await workspace(master, "w"))["id"]
        p = (await project(master, ws, "p"))["id"]
        paused, _ = await ended_experiment(master, p, store, end=False)
        path = f"/api/v1/projects/{p}"
        r = await master.client.delete(path, headers=master.user)
        assert_error(r, 409, f"experiment {paused} is PAUSED")
        await master.client.post(f"/api/v1/experiments/{paused}/kill", headers=master.user)

        registered, ckpt = await ended_experiment(master, p, store)
        r = await master.client.post(
            "/api/v1/models", json={"name": "m", "workspaceId": 1}, headers=master.user
        )
        assert r.status_code == 200, r.text
        r = await master.client.post(
            "/api/v1/models/m/versions", json={"checkpointUuid": ckpt}, headers=master.user
        )
        assert r.status_code == 200, r.text
        r = await master.client.delete(path, headers=master.user)
        assert_error(r, 409, f"experiment {registered}'s checkpoints are registered")
        assert "m version 1" in r.text
        # Nothing was touched: the model version still reaches its checkpoint's files.
        assert (store / ckpt / "model.txt").exists()
        assert (await get(master, path))["project"]["state"] == "WORKSPACE_STATE_UNSPECIFIED"
        version = await get(master, "/api/v1/models/m/versions/1")
        assert version["modelVersion"]["checkpoint"]["uuid"] == ckpt
        r = await master.client.delete("/api/v1/models/m/versions/1", headers=master.user)
        assert r.status_code == 200, r.text

        protected, pckpt = await ended_experiment(master, p, store)
        r = await master.client.put(
            f"/api/v1/checkpoints/{pckpt}/protection", json={"protected": True}, headers=master.user
        )
        assert r.status_code == 200, r.text
        r = await master.client.delete(path, headers=master.user)
        assert_error(r, 409, f"experiment {protected} has protected checkpoints")
        r = await master.client.put(
            f"/api/v1/checkpoints/{pckpt}/protection",
            json={"protected": False},
            headers=master.user,
        )
        r = await master.client.delete(path, headers=master.user)
        assert r.json() == {"completed": False}, r.text
        await until_gone(master, path)

    async def test_a_checkpoint_that_cannot_be_deleted_fails_it_until_deleted_again(
        self, master: Master, tmp_path: Path
    ) -> None:
        store = tmp_path / "ckpts"
        ws = (await workspace(master, "w"))["id"]
        p = (await project(master, ws, "p"))["id"]
        exp_id, ckpt = await ended_experiment(master, p, store, files=False)
        # A file where the checkpoint's folder should be: removing the folder fails.
        store.mkdir()
        (store / ckpt).write_text("not a folder")
        r = await master.client.delete(f"/api/v1/workspaces/{ws}", headers=master.user)
        assert r.json() == {"completed": False}, r.text
        for _ in range(400):
            shown = (await get(master, f"/api/v1/projects/{p}"))["project"]
            if shown["state"] != "WORKSPACE_STATE_DELETING":
                break
            await asyncio.sleep(0.05)
        assert shown["state"] == "WORKSPACE_STATE_DELETE_FAILED"
        assert f"checkpoint {ckpt} could not be deleted" in shown["errorMessage"]
        got = (await get(master, f"/api/v1/workspaces/{ws}"))["workspace"]
        assert got["state"] == "WORKSPACE_STATE_DELETE_FAILED"
        assert "project 'p'" in got["errorMessage"] and ckpt in got["errorMessage"]
        # Its experiment is still there, and may be moved out now the deletion stopped.
        assert (await get(master, f"/api/v1/experiments/{exp_id}"))["experiment"]["id"] == exp_id
        (store / ckpt).unlink()
        r = await master.client.delete(f"/api/v1/workspaces/{ws}", headers=master.user)
        assert r.json() == {"completed": False}, r.text
        await until_gone(master, f"/api/v1/workspaces/{ws}")
        assert_error(await master.client.get(f"/api/v1/projects/{p}", headers=master.user), 404)


class TestWorkspaceDeletion:
    async def test_goes_with_projects_experiments_and_templates(
        self, master: Master, tmp_path: Path
    ) -> None:
        store = tmp_path / "ckpts"
        ws = (await workspace(master, "w"))["id"]
        projects = [(await project(master, ws, name))["id"] for name in ("a", "b")]
        made = [await ended_experiment(master, p, store) for p in projects]
        r = await master.client.post(
            "/api/v1/templates/t",
            json={"name": "t", "config": {"description": "x"}, "workspaceId": ws},
            headers=master.user,
        )
        assert r.status_code == 200, r.text
        r = await master.client.delete(f"/api/v1/workspaces/{ws}", headers=master.user)
        assert r.json() == {"completed": False}, r.text
        # While it is being deleted nothing goes in.
        r = await master.client.post(
            f"/api/v1/workspaces/{ws}/projects", json={"name": "late"}, headers=master.user
        )
        assert r.status_code in (404, 409), r.text
        await until_gone(master, f"/api/v1/workspaces/{ws}")
        for p in projects:
            assert_error(await master.client.get(f"/api/v1/projects/{p}", headers=master.user), 404)
        for exp_id, ckpt in made:
            gone = await master.client.get(f"/api/v1/experiments/{exp_id}", headers=master.user)
            assert_error(gone, 404)
            assert not (store / ckpt).exists()
        assert_error(await master.client.get("/api/v1/templates/t", headers=master.user), 404)

    async def test_unknown_ids_and_strangers(self, master: Master, tmp_path: Path) -> None:
        store = tmp_path / "ckpts"
        for path in ("/api/v1/workspaces/999999", "/api/v1/projects/999999"):
            assert_error(await master.client.delete(path, headers=master.user), 404)
        ws = (await workspace(master, "mine"))["id"]
        p = (await project(master, ws, "p"))["id"]
        await ended_experiment(master, p, store)
        r = await master.client.post(
            "/api/v1/users",
            json={"user": {"username": "stranger", "active": True}, "password": PASSWORD},
            headers=master.admin,
        )
        assert r.status_code == 200, r.text
        stranger = await master.login("stranger")
        for path in (f"/api/v1/workspaces/{ws}", f"/api/v1/projects/{p}"):
            assert_error(await master.client.delete(path, headers=stranger), 403)
            assert (await get(master, path))[path.split("/")[3][:-1]]["state"] == (
                "WORKSPACE_STATE_UNSPECIFIED"
            )
        # An admin may.
        r = await master.client.delete(f"/api/v1/workspaces/{ws}", headers=master.admin)
        assert r.json() == {"completed": False}, r.text
        await until_gone(master, f"/api/v1/workspaces/{ws}")

    async def test_running_work_refuses_it_ended_work_goes_with_it(self, master: Master) -> None:
        ws = (await workspace(master, "w"))["id"]
        r = await master.client.post(
            "/api/v1/commands",
            json={"config": {"entrypoint": ["sleep", "1000"]}, "workspaceId": ws},
            headers=master.user,
        )
        assert r.status_code == 200, r.text
        task_id = r.json()["command"]["id"]
        r = await master.client.delete(f"/api/v1/workspaces/{ws}", headers=master.user)
        assert_error(r, 409, f"command {task_id} is running: kill it first")
        r = await master.client.post(f"/api/v1/commands/{task_id}/kill", headers=master.user)
        assert r.status_code == 200, r.text
        r = await master.client.delete(f"/api/v1/workspaces/{ws}", headers=master.user)
        assert r.json() == {"completed": True}, r.text
        r = await master.client.get(f"/api/v1/commands/{task_id}", headers=master.user)
        assert_error(r, 404)


async def test_a_checkpoint_being_deleted_is_not_registered(
    master: Master, db_url: str, tmp_path: Path
) -> None:
    """Its files are going (the project's deletion marked it): a version would outlive them."""
    ws = (await workspace(master, "w"))["id"]
    p = (await project(master, ws, "p"))["id"]
    _, ckpt = await ended_experiment(master, p, tmp_path / "ckpts")
    engine = make_engine(db_url)
    try:
        async with transaction(make_sessionmaker(engine)) as session:
            await request_deletion(session, [ckpt], datetime(2026, 1, 1, tzinfo=UTC))
    finally:
        await engine.dispose()
    r = await master.client.post(
        "/api/v1/models", json={"name": "m", "workspaceId": 1}, headers=master.user
    )
    assert r.status_code == 200, r.text
    r = await master.client.post(
        "/api/v1/models/m/versions", json={"checkpointUuid": ckpt}, headers=master.user
    )
    assert_error(r, 400, "is being deleted")
