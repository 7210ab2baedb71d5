"""`det experiment label add|remove`, `set name|description`, `wait` and `download-model-def`
against a live master (cli/commands/experiment_meta.py), with Determined 0.38.1's messages and
exit codes."""

from __future__ import annotations

import asyncio
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.commands.experiment_meta import Wait, wait_verdict
from cli.main import app
from tests.cli.commands.conftest import StartMaster, det_for, experiment_yaml, fails, ok, submit
from tests.conftest import PASSWORD
from tests.controlplane.api.test_experiments_api import entry
from tests.support.live_master import eventually


@pytest.mark.parametrize(
    ("state", "verdict"),
    [
        ("STATE_COMPLETED", Wait.COMPLETED),
        ("STATE_CANCELED", Wait.ENDED),
        ("STATE_ERROR", Wait.ENDED),
        ("STATE_DELETED", Wait.ENDED),
        ("STATE_PAUSED", Wait.PAUSED),
        ("STATE_ACTIVE", Wait.GOING),
        ("STATE_QUEUED", Wait.GOING),
        ("STATE_RUNNING", Wait.GOING),
        ("STATE_STOPPING_CANCELED", Wait.GOING),
        ("STATE_DELETING", Wait.GOING),
        (None, Wait.GOING),
    ],
)
def test_wait_verdict(state: str | None, verdict: Wait) -> None:
    assert wait_verdict(state) is verdict


async def test_labels_name_and_description(start_master: StartMaster) -> None:
    m = await start_master()
    exp_id = (await submit(m, experiment_yaml("named")))["experiment"]["id"]
    det = det_for(m)
    out = ok(await det("experiment", "label", "add", str(exp_id), "inf%er en/ce"))
    assert out == f"Added label 'inf%er en/ce' to experiment {exp_id}\n"
    ok(await det("e", "label", "add", str(exp_id), "b"))
    ok(await det("e", "label", "add", str(exp_id), "b"))  # once only
    exp = (await m.get(f"/api/v1/experiments/{exp_id}"))["experiment"]
    assert exp["labels"] == ["inf%er en/ce", "b"]
    out = ok(await det("e", "label", "remove", str(exp_id), "inf%er en/ce"))
    assert out == f"Removed label 'inf%er en/ce' from experiment {exp_id}\n"
    assert (await m.get(f"/api/v1/experiments/{exp_id}"))["experiment"]["labels"] == ["b"]

    out = ok(await det("e", "set", "name", str(exp_id), "renamed"))
    assert out == f"Set name of experiment {exp_id} to 'renamed'\n"
    out = ok(await det("e", "set", "description", str(exp_id), "what it is"))
    assert out == f"Set description of experiment {exp_id} to 'what it is'\n"
    exp = (await m.get(f"/api/v1/experiments/{exp_id}"))["experiment"]
    assert (exp["name"], exp["description"]) == ("renamed", "what it is")

    fails(await det("e", "label", "add", "999999", "x"), "999999")
    fails(await det("e", "set", "name", str(exp_id), " "), "empty")


async def test_wait_exits_1_unless_completed_and_refuses_a_paused_one(
    start_master: StartMaster,
) -> None:
    m = await start_master()
    det = det_for(m)
    exp_id = (await submit(m, experiment_yaml("w")))["experiment"]["id"]
    ok(await det("e", "pause", str(exp_id)))
    fails(await det("e", "wait", str(exp_id), "--polling-interval", "0"), "paused state")
    ok(await det("e", "kill", str(exp_id)))

    async def canceled() -> bool:
        exp = (await m.get(f"/api/v1/experiments/{exp_id}"))["experiment"]
        return exp["state"] == "STATE_CANCELED"

    await eventually(canceled, timeout=10)
    result = await det("e", "wait", str(exp_id), "--polling-interval", "0")
    assert result.exit_code == 1 and result.output == "", result.output
    fails(await det("e", "wait", "999999"), "999999")


async def test_download_model_def(start_master: StartMaster, tmp_path: Path) -> None:
    m = await start_master()
    files = [entry("train.py", b"print('hi')\n")]
    body = {"config": experiment_yaml("md"), "modelDefinition": files, "activate": False}
    exp_id = (await m.post("/api/v1/experiments", body))["experiment"]["id"]
    det = det_for(m)
    ok(await det("e", "download-model-def", str(exp_id), "--output-dir", str(tmp_path)))
    with tarfile.open(tmp_path / f"experiment_{exp_id}_model_def.tgz") as tgz:
        member = tgz.extractfile("train.py")
        assert member is not None and member.read() == b"print('hi')\n"
    fails(await det("e", "download-model-def", "999999", "--output-dir", str(tmp_path)), "999999")
    missing = tmp_path / "no" / "such"
    fails(await det("e", "download-model-def", str(exp_id), "--output-dir", str(missing)), "cannot")


async def test_delete_and_delete_tb_files(start_master: StartMaster) -> None:
    m = await start_master()
    det = det_for(m)
    exp_id = (await submit(m, experiment_yaml("doomed")))["experiment"]["id"]
    fails(await det("e", "delete", str(exp_id), "--yes"), "only ended experiments")
    ok(await det("e", "kill", str(exp_id)))

    async def canceled() -> bool:
        exp = (await m.get(f"/api/v1/experiments/{exp_id}"))["experiment"]
        return exp["state"] == "STATE_CANCELED"

    await eventually(canceled, timeout=10)
    out = ok(await det("e", "delete-tb-files", str(exp_id)))
    assert out == f"Deleted the TensorBoard files of experiment {exp_id}\n"
    result = await asyncio.to_thread(
        CliRunner().invoke,
        app,
        ["e", "delete", str(exp_id)],
        input="n\n",
        env={"DET_MASTER": m.url, "DET_USER": "admin", "DET_PASS": PASSWORD},
    )
    assert result.exit_code == 0 and "Aborting experiment deletion." in result.stdout
    assert (await m.get(f"/api/v1/experiments/{exp_id}"))["experiment"]["id"] == exp_id
    out = ok(await det("e", "delete", str(exp_id), "--yes"))
    assert out == f"Deletion of experiment {exp_id} is in progress\n"
    r = await m.http.get(f"/api/v1/experiments/{exp_id}", headers=m.admin)
    assert r.status_code == 404  # no checkpoints: gone at once
    fails(await det("e", "delete", "999999", "--yes"), "999999")
