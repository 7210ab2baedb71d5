"""Our `det model`, `det workspace`, `det project` and `det experiment move` against a real
master subprocess: the Determined client's commands and flags, their tables, and one clear
line for bad input."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import httpx
import pytest

from cli.auth import hash_password
from tests.cli.test_cli_against_master import PASSWORD, Master, det, fails, master, ok

pytestmark = pytest.mark.slow
__all__ = ["det", "master"]  # fixtures used by name below

EXP = "name: e\nentrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: loss\n"


def admin_http(m: Master) -> httpx.Client:
    body = {"username": "admin", "password": hash_password(PASSWORD), "isHashed": True}
    token = httpx.post(f"{m.url}/api/v1/auth/login", json=body, timeout=30).json()["token"]
    return httpx.Client(base_url=m.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def new_checkpoint(m: Master) -> str:
    with admin_http(m) as http:
        exp = http.post("/api/v1/experiments", json={"config": EXP, "activate": False}).json()
        trials = http.get(f"/api/v1/experiments/{exp['experiment']['id']}/trials").json()
        ckpt = str(uuid.uuid4())
        body = {
            "uuid": ckpt,
            "resources": {"model.pt": 7},
            "metadata": {"steps_completed": 12},
            "training": {"trialId": trials["trials"][0]["id"]},
        }
        assert http.post("/api/v1/checkpoints", json=body).status_code == 200
        return ckpt


def test_model_commands(det, master: Master) -> None:
    name = "our model ✓"
    out = ok(det("model", "create", name, "--description", "first"))
    assert name in out and "first" in out
    assert name in ok(det("model", "list"))
    ckpt = new_checkpoint(master)
    out = ok(det("model", "register-version", name, ckpt))
    assert ckpt in out and "12" in out
    out = ok(det("model", "describe", name))
    assert "Version #" in out and ckpt in out
    described = json.loads(ok(det("model", "describe", name, "--json")))
    assert described["name"] == name and described["numVersions"] == 1
    versions = json.loads(ok(det("model", "list-versions", name, "--json")))
    assert [v["version"] for v in versions["modelVersions"]] == [1]
    out = ok(det("model", "update", name, "--notes", "n", "--label", "a", "--metadata", '{"k": 1}'))
    assert '"k": 1' in out
    ok(det("model", "archive", name))
    assert json.loads(ok(det("model", "describe", name, "--json")))["archived"] is True
    fails(det("model", "register-version", name, new_checkpoint(master)), "archived")
    ok(det("model", "unarchive", name))
    ok(det("model", "delete", name))
    fails(det("model", "describe", name), "not found")


def test_model_bad_input_is_one_line(det, master: Master) -> None:
    fails(det("model", "create", "a/b"), "slash")
    fails(det("model", "create", "123"), "number")
    ok(det("model", "create", "twice"))
    fails(det("model", "create", "twice"), "already exists")
    fails(det("model", "register-version", "twice", str(uuid.uuid4())), "not found")
    fails(det("model", "update", "twice", "--metadata", "[1]"), "JSON object")
    fails(det("model", "list", "--sort-by", "colour"), "--sort-by")


def test_workspace_and_project_commands(det, master: Master, tmp_path: Path) -> None:
    storage = tmp_path / "storage.yaml"
    storage.write_text("type: shared_fs\nhost_path: /mnt/ours\n")
    out = ok(det("workspace", "create", "ours", "--checkpoint-storage-config-file", str(storage)))
    assert "ours" in out and "/mnt/ours" in out
    assert "ours" in ok(det("workspace", "list"))
    described = json.loads(ok(det("workspace", "describe", "ours", "--json")))
    assert described["checkpointStorageConfig"]["host_path"] == "/mnt/ours"
    out = ok(det("project", "create", "ours", "proj one", "--description", "d", "--key", "P1"))
    assert "proj one" in out and "P1" in out
    assert "proj one" in ok(det("project", "list", "ours"))
    assert "proj one" in ok(det("workspace", "list-projects", "ours"))
    project_id = json.loads(ok(det("project", "describe", "ours", "proj one", "--json")))["id"]
    config = tmp_path / "exp.yaml"
    config.write_text(EXP)
    (tmp_path / "ctx").mkdir()
    out = ok(
        det(
            "experiment",
            "create",
            "--paused",
            "--project_id",
            str(project_id),
            str(config),
            str(tmp_path / "ctx"),
        )
    )
    exp_id = re.search(r"Created experiment (\d+)", out).group(1)  # type: ignore[union-attr]
    with admin_http(master) as http:
        got = http.get(f"/api/v1/experiments/{exp_id}").json()["experiment"]
    assert got["projectId"] == project_id
    assert got["config"]["checkpoint_storage"]["host_path"] == "/mnt/ours"
    out = ok(det("project", "describe", "ours", "proj one"))
    assert "Associated Experiments" in out and re.search(rf"^\W*{exp_id}\W", out, re.M), out
    fails(det("workspace", "delete", "ours", "--yes"), "experiment")
    ok(det("experiment", "move", exp_id, "Uncategorized", "Uncategorized"))
    ok(det("project", "move-experiment", "ours", "proj one", exp_id))
    ok(det("experiment", "move", exp_id, "Uncategorized", "Uncategorized"))
    ok(det("project", "edit", "ours", "proj one", "--new_name", "proj two"))
    ok(det("project", "archive", "ours", "proj two"))
    ok(det("project", "unarchive", "ours", "proj two"))
    ok(det("workspace", "edit", "ours", "--name", "theirs", "--checkpoint-storage-config", "{}"))
    ok(det("workspace", "archive", "theirs"))
    ok(det("workspace", "unarchive", "theirs"))
    ok(det("project", "delete", "theirs", "proj two", "--yes"))
    ok(det("workspace", "delete", "theirs", "--yes"))
    fails(det("workspace", "describe", "theirs"), "not found")


def test_workspace_bad_input_is_one_line(det, master: Master) -> None:
    fails(det("workspace", "create", "x/y"), "slash")
    fails(det("workspace", "create", "bad", "--checkpoint-storage-config", "{nope"), "not JSON")
    fails(
        det("workspace", "create", "bad", "--checkpoint-storage-config", '{"type": "s3"}'), "bucket"
    )
    fails(det("workspace", "archive", "Uncategorized"), "default")
    fails(det("project", "describe", "Uncategorized", "nothing"), "not found")
    fails(det("project", "create", "Uncategorized", "k", "--key", "toolong"), "key")


def test_workspace_and_project_delete_their_experiments(det, master: Master) -> None:
    ok(det("workspace", "create", "doomed"))
    ok(det("project", "create", "doomed", "p1"))
    ok(det("project", "create", "doomed", "p2"))
    with admin_http(master) as http:
        projects = http.get("/api/v1/workspaces", params={"name": "doomed"}).json()
        ws_id = projects["workspaces"][0]["id"]
        ids = {
            p["name"]: p["id"]
            for p in http.get(f"/api/v1/workspaces/{ws_id}/projects").json()["projects"]
        }
        exps = []
        for name in ("p1", "p1", "p2"):
            body = {"config": EXP, "activate": False, "projectId": ids[name]}
            exps.append(http.post("/api/v1/experiments", json=body).json()["experiment"]["id"])
        fails(det("project", "delete", "doomed", "p1", "--yes"), f"experiment {exps[0]} is PAUSED")
        for exp_id in exps:
            assert http.post(f"/api/v1/experiments/{exp_id}/kill").status_code == 200
        out = ok(det("project", "delete", "doomed", "p1", "--yes"))
        assert "Started deletion of project p1" in out and "Project deleted successfully." in out
        assert http.get(f"/api/v1/experiments/{exps[0]}").status_code == 404
        assert http.get(f"/api/v1/experiments/{exps[2]}").status_code == 200
        out = ok(det("workspace", "delete", "doomed", "--yes"))
        assert "Workspace deleted successfully." in out, out
        assert http.get(f"/api/v1/experiments/{exps[2]}").status_code == 404
    fails(det("workspace", "describe", "doomed"), "not found")
