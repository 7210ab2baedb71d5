"""Levels 3 and 4 of wire §6 for the model registry, workspaces and projects: the real `det`
0.38.1 (`det model …`, `det workspace …`, `det project …`, `det experiment move`,
`det experiment create --project_id`) against our master subprocess."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import httpx
import pytest

from tests.compat.conftest import PASSWORD, RunningMaster
from tests.compat.test_determined_cli import Det

pytestmark = [pytest.mark.compat, pytest.mark.slow]

EXP = "name: e\nentrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: loss\n"


@pytest.fixture(scope="module")
def det(det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory):
    real = Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))

    def as_admin(*args: str, ok: bool = True) -> tuple[int, str]:
        return real(*args, ok=ok, DET_USER="admin", DET_PASS=PASSWORD)

    return as_admin


def checkpoint(master: RunningMaster, admin: dict[str, str]) -> str:
    with httpx.Client(base_url=master.url, headers=admin, timeout=30) as http:
        exp = http.post("/api/v1/experiments", json={"config": EXP, "activate": False}).json()
        trial = http.get(f"/api/v1/experiments/{exp['experiment']['id']}/trials").json()
        ckpt = str(uuid.uuid4())
        body = {
            "uuid": ckpt,
            "resources": {"model.pt": 7},
            "metadata": {"steps_completed": 12},
            "training": {"trialId": trial["trials"][0]["id"]},
        }
        assert http.post("/api/v1/checkpoints", json=body).status_code == 200
    return ckpt


@pytest.mark.parametrize("name", ["m1", "my model ✓ (v2)"])
def test_l3_model_commands(
    det, running_master: RunningMaster, admin: dict[str, str], name: str
) -> None:
    _, out = det("model", "create", name)
    assert name in out and "Creation Time" in out
    _, out = det("model", "list")
    assert name in out
    _, out = det("model", "describe", name)
    assert name in out
    ckpt = checkpoint(running_master, admin)
    # GET /models/{name}, then POST to the name the master returned: it must round-trip.
    _, out = det("model", "register-version", name, ckpt)
    assert ckpt in out and "Version #" in out
    _, out = det("model", "describe", name)
    assert ckpt in out
    _, out = det("model", "list-versions", name)
    assert ckpt in out
    _, out = det("model", "list-versions", name, "--json")  # GET /models/{id}/versions
    assert json.loads(out)["modelVersions"][0]["checkpoint"]["uuid"] == ckpt
    second = checkpoint(running_master, admin)
    _, out = det("model", "register-version", name, second, "--json")  # POST to the id
    assert json.loads(out)["modelVersion"]["version"] == 2
    _, out = det("model", "describe", name, "--version", "1")
    assert ckpt in out and second not in out
    det("model", "create", f"{name} other", "--description", "d", "-w", "Uncategorized", "--json")
    det("model", "move", f"{name} other", "-w", "Uncategorized")
    det("model", "delete", name)
    code, out = det("model", "describe", name, ok=False)
    assert code != 0 and "not found" in out


def test_l3_model_bad_input(det) -> None:
    code, out = det("model", "create", "a/b", ok=False)
    assert code != 0 and "slash" in out
    det("model", "create", "taken")
    code, out = det("model", "create", "taken", ok=False)
    assert code != 0 and "already exists" in out
    code, out = det("model", "register-version", "taken", str(uuid.uuid4()), ok=False)
    assert code != 0 and "not found" in out


def test_workspace_and_project_commands(
    det, running_master: RunningMaster, admin: dict[str, str], tmp_path: Path
) -> None:
    storage = '{"type": "shared_fs", "host_path": "/mnt/team"}'
    _, out = det("workspace", "create", "team", "--checkpoint-storage-config", storage)
    assert "team" in out and "/mnt/team" in out
    _, out = det("workspace", "list")
    assert "team" in out and "Uncategorized" in out
    _, out = det("workspace", "describe", "team", "--json")
    assert json.loads(out)["checkpointStorageConfig"]["host_path"] == "/mnt/team"
    _, out = det("project", "create", "team", "vision", "--description", "cv", "--json")
    project_id = json.loads(out)["id"]
    _, out = det("project", "list", "team")
    assert "vision" in out
    _, out = det("workspace", "list-projects", "team")
    assert "vision" in out
    (tmp_path / "exp.yaml").write_text(EXP)
    (tmp_path / "ctx").mkdir()
    _, out = det(
        "experiment", "create", "--paused", "--project_id", str(project_id),
        str(tmp_path / "exp.yaml"), str(tmp_path / "ctx"),
    )  # fmt: skip
    exp_id = re.search(r"Created experiment (\d+)", out).group(1)  # type: ignore[union-attr]
    with httpx.Client(base_url=running_master.url, headers=admin, timeout=30) as http:
        got = http.get(f"/api/v1/experiments/{exp_id}").json()["experiment"]
    assert got["projectId"] == project_id
    assert got["config"]["checkpoint_storage"]["host_path"] == "/mnt/team"
    _, out = det("project", "describe", "team", "vision")
    assert "Associated Experiments" in out and re.search(rf"^\s*{exp_id}\s*\|", out, re.M), out
    _, out = det("project", "list-experiments", "team", "vision")
    assert re.search(rf"^\s*{exp_id}\s*\|", out, re.M), out
    code, out = det("workspace", "delete", "team", "--yes", ok=False)
    assert code != 0 and "experiment" in out
    _, out = det("experiment", "move", exp_id, "Uncategorized", "Uncategorized")
    assert f"Moved experiment {exp_id}" in out
    det("project", "edit", "team", "vision", "--new_name", "vision2", "--description", "new")
    det("project", "archive", "team", "vision2")
    det("project", "unarchive", "team", "vision2")
    det("workspace", "edit", "team", "--name", "team2")
    _, out = det("workspace", "archive", "team2")
    assert "Successfully archived workspace team2." in out
    det("workspace", "unarchive", "team2")
    _, out = det("project", "delete", "team2", "vision2", "--yes")
    assert "Successfully deleted project vision2." in out
    _, out = det("workspace", "delete", "team2", "--yes")
    assert "Successfully deleted workspace team2." in out
    code, out = det("workspace", "describe", "team2", ok=False)
    assert code != 0 and "not found" in out


def test_workspace_bad_input(det) -> None:
    code, out = det("workspace", "create", "x/y", ok=False)
    assert code != 0 and "slash" in out
    code, out = det("workspace", "archive", "Uncategorized", ok=False)
    assert code != 0 and "default" in out
    det("workspace", "create", "twice")
    code, out = det("workspace", "create", "twice", ok=False)
    assert code != 0 and "already exists" in out


def test_workspace_and_project_delete_with_their_experiments(
    det, running_master: RunningMaster, admin: dict[str, str], tmp_path: Path
) -> None:
    """Determined 0.38: `completed: false`, then the client polls the DELETING object until it
    is gone, or raises DeleteFailedException with the master's errorMessage."""
    store = tmp_path / "ckpts"
    store.mkdir()
    config = EXP + f"checkpoint_storage: {{type: shared_fs, host_path: '{tmp_path}', "
    config += "storage_path: ckpts}\n"
    det("workspace", "create", "doomed")
    _, out = det("project", "create", "doomed", "p1", "--json")
    p1 = json.loads(out)["id"]
    _, out = det("project", "create", "doomed", "p2", "--json")
    p2 = json.loads(out)["id"]
    with httpx.Client(base_url=running_master.url, headers=admin, timeout=30) as http:
        made = []
        for project_id in (p1, p2):
            body = {"config": config, "activate": False, "projectId": project_id}
            exp_id = http.post("/api/v1/experiments", json=body).json()["experiment"]["id"]
            trial = http.get(f"/api/v1/experiments/{exp_id}/trials").json()["trials"][0]
            ckpt = str(uuid.uuid4())
            body = {
                "uuid": ckpt,
                "resources": {"model.pt": 7},
                "metadata": {"steps_completed": 1},
                "training": {"trialId": trial["id"]},
            }
            assert http.post("/api/v1/checkpoints", json=body).status_code == 200
            made.append((exp_id, ckpt))
        code, out = det("project", "delete", "doomed", "p1", "--yes", ok=False)
        assert code != 0 and f"experiment {made[0][0]} is PAUSED" in out, out
        for exp_id, _ in made:
            assert http.post(f"/api/v1/experiments/{exp_id}/kill").status_code == 200
        (store / made[0][1]).mkdir()
        (store / made[0][1] / "model.pt").write_text("weights")
        _, out = det("project", "delete", "doomed", "p1", "--yes")
        assert "Started deletion of project p1..." in out and "Project deleted successfully." in out
        assert not (store / made[0][1]).exists()
        assert http.get(f"/api/v1/experiments/{made[0][0]}").status_code == 404
        # A file where p2's checkpoint folder should be: its deletion fails, with the reason.
        (store / made[1][1]).write_text("not a folder")
        code, out = det("workspace", "delete", "doomed", "--yes", ok=False)
        assert code != 0 and f"checkpoint {made[1][1]} could not be deleted" in out, out
        (store / made[1][1]).unlink()
        _, out = det("workspace", "delete", "doomed", "--yes")
        assert "Workspace deleted successfully." in out, out
        assert http.get(f"/api/v1/experiments/{made[1][0]}").status_code == 404
