"""Workspaces and projects beyond the default ones, on SQLite and PostgreSQL: their endpoints,
experiments created into and moved between projects, the workspace's checkpoint storage merged
under experiment configs, bad input, and who may change what."""

from __future__ import annotations

from typing import Any

from tests.conftest import PASSWORD, Master
from tests.controlplane.api.test_bad_input import assert_error

EXP = "name: e\nentrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: loss\n"
S3 = {"type": "s3", "bucket": "b"}


async def workspace(
    m: Master, name: str, headers: dict[str, str] | None = None, **body: Any
) -> dict[str, Any]:
    r = await m.client.post(
        "/api/v1/workspaces", json={"name": name, **body}, headers=headers or m.user
    )
    assert r.status_code == 200, r.text
    return r.json()["workspace"]


async def project(
    m: Master, ws_id: int, name: str, headers: dict[str, str] | None = None, **body: Any
) -> dict[str, Any]:
    r = await m.client.post(
        f"/api/v1/workspaces/{ws_id}/projects",
        json={"name": name, "workspaceId": ws_id, **body},
        headers=headers or m.user,
    )
    assert r.status_code == 200, r.text
    return r.json()["project"]


async def experiment(m: Master, config: str = EXP, **body: Any) -> Any:
    return await m.client.post(
        "/api/v1/experiments", json={"config": config, "activate": False, **body}, headers=m.user
    )


async def names(m: Master, query: str) -> list[str]:
    r = await m.client.get(f"/api/v1/workspaces?{query}", headers=m.user)
    assert r.status_code == 200, r.text
    return [w["name"] for w in r.json()["workspaces"]]


class TestWorkspaces:
    async def test_create_list_describe_edit_archive_delete(self, master: Master) -> None:
        made = await workspace(master, "Team ✓", checkpointStorageConfig=S3)
        assert made["username"] == "determined" and made["numProjects"] == 0
        assert made["checkpointStorageConfig"] == S3 and made["immutable"] is False
        # How the Determined client finds a workspace by name.
        assert await names(master, "nameCaseSensitive=Team ✓") == ["Team ✓"]
        assert await names(master, "nameCaseSensitive=team ✓") == []
        assert await names(master, "name=team ✓") == ["Team ✓"]
        assert await names(master, "sortBy=SORT_BY_NAME&orderBy=ORDER_BY_DESC") == [
            "Uncategorized",
            "Team ✓",
        ]
        ws = made["id"]
        r = await master.client.patch(
            f"/api/v1/workspaces/{ws}",
            json={
                "name": "Team 2",
                "checkpointStorageConfig": {},
                "defaultComputeResourcePool": "default",
            },
            headers=master.user,
        )
        got = r.json()["workspace"]
        assert (got["name"], got.get("checkpointStorageConfig"), got["defaultComputePool"]) == (
            "Team 2",
            None,
            "default",
        )
        await master.client.post(f"/api/v1/workspaces/{ws}/archive", headers=master.user)
        assert await names(master, "archived=true") == ["Team 2"]
        assert await names(master, "archived=false") == ["Uncategorized"]
        r = await master.client.post(f"/api/v1/workspaces/{ws}/archive", headers=master.user)
        assert_error(r, 400, "already archived")
        await master.client.post(f"/api/v1/workspaces/{ws}/unarchive", headers=master.user)
        await project(master, ws, "empty")
        r = await master.client.delete(f"/api/v1/workspaces/{ws}", headers=master.user)
        assert r.status_code == 200 and r.json() == {"completed": True}
        assert_error(await master.client.get(f"/api/v1/workspaces/{ws}", headers=master.user), 404)

    async def test_the_default_workspace_and_project_cannot_change(self, master: Master) -> None:
        for verb in ("archive", "unarchive"):
            for kind in ("workspaces", "projects"):
                r = await master.client.post(f"/api/v1/{kind}/1/{verb}", headers=master.admin)
                assert_error(r, 400, "default")
        for kind in ("workspaces", "projects"):
            r = await master.client.delete(f"/api/v1/{kind}/1", headers=master.admin)
            assert_error(r, 400, "default")
            r = await master.client.patch(
                f"/api/v1/{kind}/1", json={"name": "x"}, headers=master.admin
            )
            assert_error(r, 400, "default")

    async def test_running_experiments_or_models_keep_a_workspace_from_deletion(
        self, master: Master
    ) -> None:
        # The experiment is PAUSED (not activated): only ended ones are deleted with it.
        ws = (await workspace(master, "busy"))["id"]
        p = await project(master, ws, "p")
        assert (await experiment(master, projectId=p["id"])).status_code == 200
        assert_error(
            await master.client.delete(f"/api/v1/workspaces/{ws}", headers=master.user),
            409,
            "experiment",
        )
        assert_error(
            await master.client.delete(f"/api/v1/projects/{p['id']}", headers=master.user),
            409,
            "experiment",
        )
        ws2 = (await workspace(master, "models"))["id"]
        r = await master.client.post(
            "/api/v1/models", json={"name": "m", "workspaceId": ws2}, headers=master.user
        )
        assert r.status_code == 200, r.text
        assert_error(
            await master.client.delete(f"/api/v1/workspaces/{ws2}", headers=master.user),
            409,
            "model",
        )
        assert (await master.client.get(f"/api/v1/projects/{p['id']}", headers=master.user)).json()[
            "project"
        ]["numExperiments"] == 1


class TestProjects:
    async def test_create_list_describe_edit_archive_delete(self, master: Master) -> None:
        ws = (await workspace(master, "w"))["id"]
        p = await project(master, ws, "Vision", description="cv work")
        assert (p["key"], p["workspaceName"], p["numExperiments"]) == ("VIS", "w", 0)
        assert (await project(master, ws, "Visual"))["key"] == "VIS1"
        assert (await project(master, ws, "keyed", key="ab1"))["key"] == "AB1"
        r = await master.client.get(
            f"/api/v1/workspaces/{ws}/projects?name=Vision", headers=master.user
        )
        assert [x["name"] for x in r.json()["projects"]] == ["Vision"]
        r = await master.client.get(
            f"/api/v1/workspaces/{ws}/projects?sortBy=SORT_BY_NAME&orderBy=ORDER_BY_DESC",
            headers=master.user,
        )
        assert [x["name"] for x in r.json()["projects"]] == ["keyed", "Visual", "Vision"]
        r = await master.client.patch(
            f"/api/v1/projects/{p['id']}",
            json={"name": "Vision 2", "description": "new"},
            headers=master.user,
        )
        assert (r.json()["project"]["name"], r.json()["project"]["description"]) == (
            "Vision 2",
            "new",
        )
        await master.client.post(f"/api/v1/projects/{p['id']}/archive", headers=master.user)
        assert (await experiment(master, projectId=p["id"])).status_code == 400
        await master.client.post(f"/api/v1/projects/{p['id']}/unarchive", headers=master.user)
        r = await master.client.delete(f"/api/v1/projects/{p['id']}", headers=master.user)
        assert r.json() == {"completed": True}
        assert_error(
            await master.client.get(f"/api/v1/projects/{p['id']}", headers=master.user), 404
        )

    async def test_same_name_in_two_workspaces_but_not_in_one(self, master: Master) -> None:
        a, b = (await workspace(master, "a"))["id"], (await workspace(master, "b"))["id"]
        await project(master, a, "p")
        await project(master, b, "p")
        r = await master.client.post(
            f"/api/v1/workspaces/{a}/projects", json={"name": "p"}, headers=master.user
        )
        assert_error(r, 409, "already has a project")
        r = await master.client.post(
            f"/api/v1/workspaces/{a}/projects",
            json={"name": "q", "key": "VIS"},
            headers=master.user,
        )
        assert r.status_code == 200
        r = await master.client.post(
            f"/api/v1/workspaces/{b}/projects",
            json={"name": "r", "key": "VIS"},
            headers=master.user,
        )
        assert_error(r, 409, "key")

    async def test_move_a_project(self, master: Master) -> None:
        a, b = (await workspace(master, "a"))["id"], (await workspace(master, "b"))["id"]
        p = await project(master, a, "p")
        r = await master.client.post(
            f"/api/v1/projects/{p['id']}/move",
            json={"destinationWorkspaceId": b},
            headers=master.user,
        )
        assert r.status_code == 200, r.text
        r = await master.client.get(f"/api/v1/projects/{p['id']}", headers=master.user)
        assert r.json()["project"]["workspaceId"] == b


class TestExperimentsInProjects:
    async def test_by_project_id_by_config_names_and_moved(self, master: Master) -> None:
        ws = (await workspace(master, "research"))["id"]
        p, q = await project(master, ws, "nlp"), await project(master, ws, "cv")
        r = await experiment(master, projectId=p["id"])
        got = r.json()["experiment"]
        assert (got["projectId"], got["workspaceId"]) == (p["id"], ws)
        assert (got["workspaceName"], got["projectName"]) == ("research", "nlp")
        r = await master.client.get(f"/api/v1/experiments?projectId={p['id']}", headers=master.user)
        assert [e["projectName"] for e in r.json()["experiments"]] == ["nlp"]
        r = await experiment(master, EXP + "workspace: research\nproject: cv\n")
        assert r.status_code == 200, r.text
        exp_id = r.json()["experiment"]["id"]
        assert r.json()["experiment"]["projectId"] == q["id"]
        r = await master.client.get(f"/api/v1/experiments?projectId={q['id']}", headers=master.user)
        assert [e["id"] for e in r.json()["experiments"]] == [exp_id]
        r = await master.client.post(
            f"/api/v1/experiments/{exp_id}/move",
            json={"destinationProjectId": p["id"], "experimentId": exp_id},
            headers=master.user,
        )
        assert r.status_code == 200, r.text
        r = await master.client.get(f"/api/v1/experiments/{exp_id}", headers=master.user)
        assert r.json()["experiment"]["projectId"] == p["id"]
        assert (await experiment(master)).json()["experiment"]["projectId"] == 1

    async def test_unknown_or_archived_places_are_refused(self, master: Master) -> None:
        assert_error(await experiment(master, projectId=4242), 404, "project")
        assert_error(
            await experiment(master, EXP + "workspace: nowhere\nproject: p\n"), 404, "not found"
        )
        assert_error(await experiment(master, EXP + "project: p\n"), 400, "both")
        ws = (await workspace(master, "old"))["id"]
        p = await project(master, ws, "p")
        await master.client.post(f"/api/v1/workspaces/{ws}/archive", headers=master.user)
        assert_error(await experiment(master, projectId=p["id"]), 400, "archived")
        r = await master.client.post(
            f"/api/v1/workspaces/{ws}/projects", json={"name": "n"}, headers=master.user
        )
        assert_error(r, 400, "archived")
        exp_id = (await experiment(master)).json()["experiment"]["id"]
        r = await master.client.post(
            f"/api/v1/experiments/{exp_id}/move",
            json={"destinationProjectId": p["id"]},
            headers=master.user,
        )
        assert_error(r, 400, "archived")
        r = await master.client.post(
            f"/api/v1/experiments/{exp_id}/move",
            json={"destinationProjectId": 4242},
            headers=master.user,
        )
        assert_error(r, 404, "project")
        r = await master.client.post(
            "/api/v1/experiments/4242/move", json={"destinationProjectId": 1}, headers=master.user
        )
        assert_error(r, 404, "experiment")

    async def test_the_workspace_checkpoint_storage_is_merged_under(self, master: Master) -> None:
        storage = {"type": "shared_fs", "host_path": "/mnt/team", "save_trial_best": 4}
        ws = (await workspace(master, "stored", checkpointStorageConfig=storage))["id"]
        p = (await project(master, ws, "p"))["id"]

        async def storage_of(config: str) -> dict[str, Any]:
            r = await experiment(master, config, projectId=p)
            assert r.status_code == 200, r.text
            return r.json()["experiment"]["config"]["checkpoint_storage"]

        got = await storage_of(EXP)
        assert (got["type"], got["host_path"], got["save_trial_best"]) == (
            "shared_fs",
            "/mnt/team",
            4,
        )
        got = await storage_of(EXP + "checkpoint_storage:\n  save_trial_best: 1\n")
        assert (got["host_path"], got["save_trial_best"]) == ("/mnt/team", 1)
        got = await storage_of(EXP + "checkpoint_storage:\n  type: s3\n  bucket: own\n")
        assert (got["type"], got["bucket"], got["save_trial_best"]) == ("s3", "own", 4)
        r = await experiment(master)
        assert (
            r.json()["experiment"]["config"]["checkpoint_storage"].get("host_path") != "/mnt/team"
        )


class TestBadInput:
    async def test_bad_names_keys_and_storage_are_400(self, master: Master) -> None:
        for name, why in (
            ("a/b", "slash"),
            ("x\x00y", "control"),
            ("", "empty"),
            ("n" * 256, "255"),
        ):
            r = await master.client.post(
                "/api/v1/workspaces", json={"name": name}, headers=master.user
            )
            assert_error(r, 400, why)
            r = await master.client.post(
                "/api/v1/workspaces/1/projects", json={"name": name}, headers=master.user
            )
            assert_error(r, 400, why)
        for storage, why in (
            ({"type": "nfs"}, "checkpointStorageConfig"),
            ({"type": "s3"}, "bucket"),
        ):
            r = await master.client.post(
                "/api/v1/workspaces",
                json={"name": "s", "checkpointStorageConfig": storage},
                headers=master.user,
            )
            assert_error(r, 400, why)
        for key in ("toolong", "a-b", "ü"):
            r = await master.client.post(
                "/api/v1/workspaces/1/projects", json={"name": "k", "key": key}, headers=master.user
            )
            assert_error(r, 400, "key")
        r = await master.client.post(
            "/api/v1/workspaces/1/projects",
            json={"name": "d", "description": "d" * 9000},
            headers=master.user,
        )
        assert_error(r, 400, "description")
        r = await master.client.post(
            "/api/v1/workspaces", json={"name": ["not", "text"]}, headers=master.user
        )
        assert_error(r, 400)
        assert await names(master, "") == ["Uncategorized"]
        r = await master.client.get("/api/v1/workspaces/1/projects", headers=master.user)
        assert [x["name"] for x in r.json()["projects"]] == ["Uncategorized"]

    async def test_duplicates_are_409_and_unknown_ids_404(self, master: Master) -> None:
        await workspace(master, "dup")
        other = await workspace(master, "other")
        r = await master.client.post(
            "/api/v1/workspaces", json={"name": "dup"}, headers=master.admin
        )
        assert_error(r, 409, "already exists")
        r = await master.client.patch(
            f"/api/v1/workspaces/{other['id']}", json={"name": "dup"}, headers=master.user
        )
        assert_error(r, 409, "already exists")
        for method, route in (
            ("GET", "/api/v1/workspaces/4242"),
            ("DELETE", "/api/v1/workspaces/4242"),
            ("POST", "/api/v1/workspaces/4242/archive"),
            ("GET", "/api/v1/workspaces/4242/projects"),
            ("GET", "/api/v1/projects/4242"),
            ("DELETE", "/api/v1/projects/4242"),
            ("POST", "/api/v1/projects/4242/unarchive"),
        ):
            assert_error(
                await master.client.request(method, route, headers=master.user), 404, "not found"
            )
        r = await master.client.post(
            "/api/v1/workspaces/4242/projects", json={"name": "p"}, headers=master.user
        )
        assert_error(r, 404, "workspace")


class TestWhoMayChange:
    async def test_owners_and_admins_change_everyone_reads(self, master: Master) -> None:
        r = await master.client.post(
            "/api/v1/users",
            json={"user": {"username": "carol", "active": True}, "password": PASSWORD},
            headers=master.admin,
        )
        assert r.status_code == 200, r.text
        carol = await master.login("carol")
        ws = await workspace(master, "det's")
        p = await project(master, ws["id"], "carol's", headers=carol)  # anyone may add a project
        mine = await project(master, ws["id"], "det's project")
        for method, route, body in (
            ("PATCH", f"/api/v1/workspaces/{ws['id']}", {"name": "carol's now"}),
            ("POST", f"/api/v1/workspaces/{ws['id']}/archive", None),
            ("DELETE", f"/api/v1/workspaces/{ws['id']}", None),
            ("PATCH", f"/api/v1/projects/{mine['id']}", {"description": "carol's"}),
            ("POST", f"/api/v1/projects/{mine['id']}/archive", None),
            ("DELETE", f"/api/v1/projects/{mine['id']}", None),
        ):
            kwargs = {} if body is None else {"json": body}
            assert_error(
                await master.client.request(method, route, headers=carol, **kwargs), 403, "owner"
            )
        assert (
            await master.client.get(f"/api/v1/workspaces/{ws['id']}", headers=carol)
        ).status_code == 200
        # A workspace's owner and an admin change a project someone else made in it.
        r = await master.client.patch(
            f"/api/v1/projects/{p['id']}", json={"description": "ok"}, headers=master.user
        )
        assert r.status_code == 200, r.text
        r = await master.client.post(f"/api/v1/workspaces/{ws['id']}/archive", headers=master.admin)
        assert r.status_code == 200, r.text
        exp_id = (await experiment(master)).json()["experiment"]["id"]
        r = await master.client.post(
            f"/api/v1/experiments/{exp_id}/move", json={"destinationProjectId": 1}, headers=carol
        )
        assert_error(r, 403, "owner")


class TestWorkspaceDefaults:
    async def test_a_default_pool_must_exist(self, master: Master) -> None:
        # Where defaults apply, and bound pools: tests/controlplane/api/test_workspace_pools.py.
        r = await master.client.post(
            "/api/v1/workspaces",
            json={"name": "gpus", "defaultComputePool": "gpu-pool"},
            headers=master.user,
        )
        assert_error(r, 400, "'gpu-pool' does not exist")

    async def test_agent_users_and_namespaces_are_refused_not_dropped(self, master: Master) -> None:
        group = {"agentUid": 1000, "agentUser": "u", "agentGid": 1000, "agentGroup": "g"}
        r = await master.client.post(
            "/api/v1/workspaces", json={"name": "w", "agentUserGroup": group}, headers=master.user
        )
        assert_error(r, 400, "link-with-agent-user")
        r = await master.client.post(
            "/api/v1/workspaces",
            json={"name": "w", "clusterQuotaPairs": {"": 4}, "agentUserGroup": None},
            headers=master.user,
        )
        assert_error(r, 400, "Kubernetes")
        assert await names(master, "") == ["Uncategorized"]
