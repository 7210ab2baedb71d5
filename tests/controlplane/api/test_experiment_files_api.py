"""Experiment data reads Determined's client and web UI make (issue 39), on SQLite and
PostgreSQL: the context's file tree and files, the validation history, a project's metric
ranges, and a checkpoint's metadata, each with the owner, another user, an admin, no login
and bad input. (A task's token is covered for every route by tests/api/test_task_tokens.py,
RBAC by tests/api/test_rbac_routes.py.)"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from tests.conftest import PASSWORD, Master
from tests.controlplane.api.test_bad_input import assert_error
from tests.controlplane.api.test_experiments_api import entry

CONFIG = "name: e\nentrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: loss\n"
FILES = [
    entry("train.py", b"print('hi')\n"),
    entry("sub", b"", 53, 0o40755),
    entry("sub/w.bin", b"\x00\xff"),
]


async def other_user(m: Master) -> dict[str, str]:
    body = {"user": {"username": "alice", "active": True}, "password": PASSWORD}
    r = await m.client.post("/api/v1/users", json=body, headers=m.admin)
    assert r.status_code == 200, r.text
    return await m.login("alice")


async def experiment(m: Master, config: str = CONFIG) -> tuple[int, int]:
    r = await m.client.post(
        "/api/v1/experiments",
        json={"config": config, "activate": False, "modelDefinition": FILES},
        headers=m.user,
    )
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]
    r = await m.client.get(f"/api/v1/experiments/{exp['id']}/trials", headers=m.user)
    return exp["id"], r.json()["trials"][0]["id"]


async def report(m: Master, trial: int, group: str, steps: int, avg: dict[str, Any]) -> None:
    body = {
        "group": group,
        "metrics": {"trialId": trial, "stepsCompleted": steps, "metrics": {"avgMetrics": avg}},
    }
    r = await m.client.post(f"/api/v1/trials/{trial}/metrics", json=body, headers=m.user)
    assert r.status_code == 200, r.text


class TestFileTree:
    async def test_tree_and_file_for_every_reader(self, master: Master) -> None:
        exp_id, _ = await experiment(master)
        alice = await other_user(master)
        for who in (master.user, alice, master.admin):
            r = await master.client.get(f"/api/v1/experiments/{exp_id}/file_tree", headers=who)
            assert r.status_code == 200, r.text
            files = r.json()["files"]
            assert [(f["path"], f["isDir"]) for f in files] == [("sub", True), ("train.py", False)]
            assert files[0]["files"][0] | {"modifiedTime": None} == {
                "path": "sub/w.bin",
                "name": "w.bin",
                "modifiedTime": None,
                "contentLength": 2,
                "isDir": False,
                "contentType": "application/octet-stream",
                "files": [],
            }
            assert files[1]["modifiedTime"] == "2023-11-14T22:13:20Z"
            r = await master.client.post(
                f"/api/v1/experiments/{exp_id}/file",
                json={"experimentId": exp_id, "path": "train.py"},
                headers=who,
            )
            assert r.status_code == 200, r.text
            assert base64.b64decode(r.json()["file"]) == b"print('hi')\n"

    async def test_bad_input(self, master: Master) -> None:
        exp_id, _ = await experiment(master)
        base = f"/api/v1/experiments/{exp_id}"
        c = master.client
        assert (await c.get(f"{base}/file_tree")).status_code == 401
        assert (await c.post(f"{base}/file", json={"path": "train.py"})).status_code == 401
        assert_error(await c.get("/api/v1/experiments/999999/file_tree", headers=master.user), 404)
        r = await c.get(f"/api/v1/experiments/{2**40}/file_tree", headers=master.user)
        assert r.status_code == 400
        for body, status, needle in (
            ({"path": "nope.py"}, 404, "no file"),
            ({"path": "sub"}, 404, "no file"),
            ({"path": ""}, 400, "path"),
            ({"path": "a\x00b"}, 400, "NUL"),
            ({"path": "x" * 5000}, 400, ""),
            ({"path": 7}, 400, ""),
            ({"experimentId": exp_id + 1, "path": "train.py"}, 400, "differs"),
        ):
            r = await c.post(f"{base}/file", json=body, headers=master.user)
            assert_error(r, status, needle)
        r = await c.post("/api/v1/experiments/999999/file", json={"path": "a"}, headers=master.user)
        assert_error(r, 404)


class TestValidationHistory:
    async def test_improving_validations_only(self, master: Master) -> None:
        exp_id, trial = await experiment(master)
        path = f"/api/v1/experiments/{exp_id}/validation-history"
        r = await master.client.get(path, headers=master.user)
        assert r.json() == {"validationHistory": []}
        for steps, loss in ((1, 0.5), (2, 0.7), (3, 0.2)):
            await report(master, trial, "validation", steps, {"loss": loss})
        await report(master, trial, "validation", 4, {"acc": 1.0})  # no searcher metric
        await report(master, trial, "training", 5, {"loss": 0.0})  # not a validation
        alice = await other_user(master)
        for who in (master.user, alice, master.admin):
            r = await master.client.get(path, headers=who)
            assert r.status_code == 200, r.text
            got = r.json()["validationHistory"]
            assert [(e["trialId"], e["searcherMetric"]) for e in got] == [
                (trial, 0.5),
                (trial, 0.2),
            ]
            assert all(e["endTime"].endswith("Z") for e in got)

    async def test_bad_input(self, master: Master) -> None:
        c = master.client
        assert (await c.get("/api/v1/experiments/1/validation-history")).status_code == 401
        r = await c.get("/api/v1/experiments/999999/validation-history", headers=master.user)
        assert_error(r, 404)
        r = await c.get("/api/v1/experiments/0/validation-history", headers=master.user)
        assert r.status_code == 400


class TestMetricRanges:
    async def test_ranges_of_the_projects_metrics(self, master: Master) -> None:
        exp_id, trial = await experiment(master)
        r = await master.client.get(f"/api/v1/experiments/{exp_id}", headers=master.user)
        project = r.json()["experiment"]["projectId"]
        for steps, loss in ((1, 0.5), (2, -0.7), (3, 0.2)):
            await report(master, trial, "training", steps, {"loss": loss, "note": "text"})
        await report(master, trial, "inf er/ence", 1, {"x": 3})
        _, trial2 = await experiment(master)
        await report(master, trial2, "training", 1, {"loss": 9.0})
        path = f"/api/v1/projects/{project}/experiments/metric-ranges"
        alice = await other_user(master)
        for who in (master.user, alice, master.admin):
            r = await master.client.get(path, headers=who)
            assert r.status_code == 200, r.text
            assert r.json()["ranges"] == [
                {"metricsName": "inf er/ence.x", "min": 3.0, "max": 3.0},
                {"metricsName": "training.loss", "min": -0.7, "max": 9.0},
            ]

    async def test_bad_input(self, master: Master) -> None:
        c = master.client
        path = "/api/v1/projects/{}/experiments/metric-ranges"
        assert (await c.get(path.format(1))).status_code == 401
        assert_error(await c.get(path.format(999999), headers=master.user), 404)
        assert (await c.get(path.format("x"), headers=master.user)).status_code in (400, 404)


class TestCheckpointMetadata:
    async def checkpoint(self, m: Master, trial: int) -> str:
        ckpt = str(uuid.uuid4())
        body = {"uuid": ckpt, "resources": {"m.pt": 1}, "metadata": {"a": 1},
                "training": {"trialId": trial}}  # fmt: skip
        r = await m.client.post("/api/v1/checkpoints", json=body, headers=m.user)
        assert r.status_code == 200, r.text
        return ckpt

    def body(self, ckpt: str, metadata: Any) -> dict[str, Any]:
        # What the SDK's Checkpoint.add_metadata sends: placeholders beside the metadata.
        return {
            "checkpoint": {
                "uuid": ckpt,
                "metadata": metadata,
                "resources": {},
                "training": {},
                "state": "STATE_UNSPECIFIED",
            }
        }

    async def test_owner_and_admin_replace_it_others_may_not(self, master: Master) -> None:
        _, trial = await experiment(master)
        ckpt = await self.checkpoint(master, trial)
        path = f"/api/v1/checkpoints/{ckpt}/metadata"
        r = await master.client.post(path, json=self.body(ckpt, {"b": [1, 2]}), headers=master.user)
        assert r.status_code == 200, r.text
        assert r.json()["checkpoint"]["uuid"] == ckpt
        assert r.json()["checkpoint"]["metadata"] == {"b": [1, 2]}
        r = await master.client.get(f"/api/v1/checkpoints/{ckpt}", headers=master.user)
        assert r.json()["checkpoint"]["metadata"] == {"b": [1, 2]}
        assert r.json()["checkpoint"]["resources"] == {"m.pt": "1"}  # untouched
        alice = await other_user(master)
        r = await master.client.post(path, json=self.body(ckpt, {}), headers=alice)
        assert_error(r, 403)
        r = await master.client.post(path, json=self.body(ckpt, {"c": 1}), headers=master.admin)
        assert r.status_code == 200 and r.json()["checkpoint"]["metadata"] == {"c": 1}
        assert (await master.client.post(path, json=self.body(ckpt, {}))).status_code == 401

    async def test_bad_input(self, master: Master) -> None:
        _, trial = await experiment(master)
        ckpt = await self.checkpoint(master, trial)
        c = master.client
        path = f"/api/v1/checkpoints/{ckpt}/metadata"
        for metadata, status, needle in (
            ({"k": "a\x00b"}, 400, "NUL"),
            ({"k": "x" * (1 << 20)}, 400, "bytes"),
            ("not an object", 400, ""),
        ):
            r = await c.post(path, json=self.body(ckpt, metadata), headers=master.user)
            assert_error(r, status, needle)
        missing = str(uuid.uuid4())
        r = await c.post(
            f"/api/v1/checkpoints/{missing}/metadata",
            json=self.body(missing, {}),
            headers=master.user,
        )
        assert_error(r, 404)
        r = await c.post("/api/v1/checkpoints/not-a-uuid/metadata", json={}, headers=master.user)
        assert_error(r, 400, "UUID")
        r = await c.get(f"/api/v1/checkpoints/{ckpt}", headers=master.user)
        assert r.json()["checkpoint"]["metadata"] == {"a": 1}
