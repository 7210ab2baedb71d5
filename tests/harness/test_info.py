"""ClusterInfo / TrialInfo: Determined's files and our environment give the same objects."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import harness as det
from harness import _info

DET_PYTHON = Path(__file__).resolve().parents[2] / ".venv-det" / "bin" / "python"

ENV = {
    "DET_MASTER": "http://127.0.0.1:8080/",
    "DET_CLUSTER_ID": "c",
    "DET_AGENT_ID": "a",
    "DET_SLOT_IDS": "[0, 1]",
    "DET_TASK_ID": "t",
    "DET_ALLOCATION_ID": "t.1",
    "DET_SESSION_TOKEN": "tok",
    "DET_TASK_TYPE": "TRIAL",
    "DET_TRIAL_ID": "1",
    "DET_EXPERIMENT_ID": "2",
    "DET_TRIAL_SEED": "3",
    "DET_HPARAMS": "{}",
    "DET_EXPERIMENT_CONFIG": json.dumps({"debug": True, "data": {"k": 1}}),
    "DET_STEPS_COMPLETED": "0",
    "DET_TRIAL_RUN_ID": "1",
}


def test_files_determined_writes_are_read(tmp_path: Path) -> None:
    """The files of the wire reference (§5.2), exact keys."""
    (tmp_path / "cluster.json").write_text(
        '{"master_url": "http://m:8080", "cluster_id": "c", "agent_id": "a", "slot_ids": [0, 1],'
        ' "task_id": "t", "allocation_id": "t.1", "session_token": "tok", "task_type": "TRIAL",'
        ' "master_cert_name": null, "master_cert_file": null, "latest_checkpoint": null}'
    )
    (tmp_path / "trial.json").write_text(
        '{"trial_id": 1, "experiment_id": 2, "trial_seed": 3, "hparams": {}, "config": {},'
        ' "steps_completed": 0, "trial_run_id": 1, "debug": false,'
        ' "inter_node_network_interface": null}'
    )
    (tmp_path / "rendezvous.json").write_text(
        '{"container_addrs": ["10.0.0.1"], "container_rank": 0, "container_slot_counts": [2]}'
    )
    (tmp_path / "resources.json").write_text('{"gpu_uuids": ["GPU-x"]}')
    info = det.get_cluster_info({"DET_INFO_DIR": str(tmp_path)})
    assert info is not None and info.trial.trial_id == 1 and info.trial._config == {}
    assert info.container_addrs == ["10.0.0.1"] and info.container_slot_counts == [2]
    assert info.gpu_uuids == ["GPU-x"] and info.latest_checkpoint is None


def test_env_and_round_trip_through_files(tmp_path: Path) -> None:
    info = det.get_cluster_info(ENV)
    assert info is not None
    assert info.master_url == "http://127.0.0.1:8080" and info.slot_ids == [0, 1]
    assert info.trial.trial_run_id == 1 and info.trial._trial_run_id == 1
    assert info.trial.debug is True and info.user_data == {"k": 1}
    assert info.container_addrs == ["127.0.0.1"] and info.container_rank == 0
    info._to_file(tmp_path / "cluster.json")
    info.trial._to_file(tmp_path / "trial.json")
    again = det.get_cluster_info({"DET_INFO_DIR": str(tmp_path)})
    assert again is not None and again.trial == info.trial
    assert json.loads((tmp_path / "cluster.json").read_text())["latest_checkpoint"] is None


def test_injected_info_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    info = det.get_cluster_info(ENV)
    monkeypatch.setattr(_info, "_info", info)
    assert det.get_cluster_info() is info


@pytest.mark.parametrize("task_type", ["COMMAND", "NOTEBOOK"])
def test_non_trial_tasks(task_type: str) -> None:
    info = det.get_cluster_info({**ENV, "DET_TASK_TYPE": task_type, "DET_LATEST_CHECKPOINT": "u"})
    assert info is not None and info.user_data == {} and info.latest_checkpoint is None
    with pytest.raises(RuntimeError, match="TRIAL"):
        info.trial  # noqa: B018


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DET_EXPERIMENT_CONFIG", "{not json", "DET_EXPERIMENT_CONFIG is not valid JSON"),
        ("DET_TRIAL_ID", "x", "DET_TRIAL_ID must be an integer"),
        ("DET_SLOT_IDS", "[", "DET_SLOT_IDS is not valid JSON"),
    ],
)
def test_bad_variables_are_named(name: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        det.get_cluster_info({**ENV, name: value})


@pytest.mark.skipif(not DET_PYTHON.exists(), reason="no .venv-det")
def test_determined_reads_the_files_we_write(tmp_path: Path) -> None:
    info = det.get_cluster_info(ENV)
    assert info is not None
    info._to_file(tmp_path / "cluster.json")
    info.trial._to_file(tmp_path / "trial.json")
    script = (
        "import sys, determined as det\n"
        "c = det.ClusterInfo._from_file(sys.argv[1] + '/cluster.json')\n"
        "t = det.TrialInfo._from_file(sys.argv[1] + '/trial.json')\n"
        "print(c.task_id, c.allocation_id, c.slot_ids, t.trial_id, t._trial_run_id, t._debug)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    out = subprocess.run(
        [str(DET_PYTHON), "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    assert out.stdout.split() == ["t", "t.1", "[0,", "1]", "1", "1", "True"]
