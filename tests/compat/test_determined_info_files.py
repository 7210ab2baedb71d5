"""The info/*.json files our master (and agent) write are what the real determined==0.38.1
package reads: its `_from_file` classmethods accept them, and its own `_to_file` writes the very
same keys for the same values."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent.protocol import Device, MasterInfo, TaskSpec
from agent.task_env import AgentEnv, task_environment, task_files
from controlplane.services.scheduling.apply import info_files
from controlplane.services.trial_launch import TrialLaunchInputs, build_trial_launch

pytestmark = pytest.mark.compat

# Runs in the determined venv: loads each file with the real classes, writes the same values
# back with the real `_to_file`, and prints both.
READ_BACK = r"""
import json, sys
from pathlib import Path
import determined as det
src, out = Path(sys.argv[1]), Path(sys.argv[2])
c = det.ClusterInfo._from_file(str(src / "cluster.json"))
t = det.TrialInfo._from_file(str(src / "trial.json"))
r = det.RendezvousInfo._from_file(str(src / "rendezvous.json"))
g = det.ResourcesInfo._from_file(str(src / "resources.json"))
c._trial_info, c._rendezvous_info, c._resources_info = t, r, g
c._to_file(str(out / "cluster.json")); t._to_file(str(out / "trial.json"))
r._to_file(str(out / "rendezvous.json")); g._to_file(str(out / "resources.json"))
print(json.dumps({
    "master_url": c.master_url, "cluster_id": c.cluster_id, "agent_id": c.agent_id,
    "slot_ids": c.slot_ids, "task_id": c.task_id, "allocation_id": c.allocation_id,
    "session_token": c.session_token, "task_type": c.task_type,
    "latest_checkpoint": c.latest_checkpoint, "trial_id": c.trial.trial_id,
    "experiment_id": c.trial.experiment_id, "seed": c.trial.trial_seed,
    "hparams": c.trial.hparams, "steps_completed": c.trial._steps_completed,
    "run_id": c.trial._trial_run_id, "debug": c.trial._debug, "user_data": c.user_data,
    "storage": c.trial._config["checkpoint_storage"], "addrs": c.container_addrs,
    "rank": c.container_rank, "slot_counts": c.container_slot_counts, "gpus": c.gpu_uuids,
}))
"""


def written_files() -> dict[str, str]:
    config = {
        "entrypoint": "python3 train.py",
        "data": {"rows": 5},
        "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/c"},
    }
    launch = build_trial_launch(
        TrialLaunchInputs(
            task_id="9.1", trial_id=11, experiment_id=9, config=config, hparams={"lr": 0.5},
            seed=3, run_id=2, username="admin", latest_checkpoint="ck-1", steps_completed=20,
        )
    )  # fmt: skip
    env = {
        **launch.environment, "DET_ALLOCATION_ID": "9.1.2", "DET_RESOURCES_ID": "9.1.2-0",
        "DET_CONTAINER_ID": "9.1.2-0", "DET_SESSION_TOKEN": "tok",
    }  # fmt: skip
    devices = (Device(id=0), Device(id=1))
    files = info_files(env, agent_id="a1", devices=devices, num_containers=1, address="127.0.0.1")
    spec = TaskSpec(
        allocation_id="9.1.2", task_id="9.1", task_type="TRIAL", environment=env,
        files={**launch.files, **files},
    )  # fmt: skip
    agent = AgentEnv(agent_id="a1", master_host="127.0.0.1", master_port=8080)
    master = MasterInfo(version="x", master_id="m", cluster_id="c-1", cluster_name="c")
    return task_files(spec, task_environment(spec, "9.1.2-0", devices, agent, master))


def test_the_real_determined_reads_our_info_files(det_bin: Path, tmp_path: Path) -> None:
    src, out = tmp_path / "ours", tmp_path / "theirs"
    src.mkdir()
    out.mkdir()
    files = written_files()
    for name, text in files.items():
        (src / Path(name).name).write_text(text)
    proc = subprocess.run(
        [str(det_bin / "python"), "-c", READ_BACK, str(src), str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {
        "master_url": "http://127.0.0.1:8080", "cluster_id": "c-1", "agent_id": "a1",
        "slot_ids": [0, 1], "task_id": "9.1", "allocation_id": "9.1.2", "session_token": "tok",
        "task_type": "TRIAL", "latest_checkpoint": "ck-1", "trial_id": 11, "experiment_id": 9,
        "seed": 3, "hparams": {"lr": 0.5}, "steps_completed": 20, "run_id": 2, "debug": False,
        "user_data": {"rows": 5}, "storage": {"type": "shared_fs", "host_path": "/tmp/c"},
        "addrs": ["127.0.0.1"], "rank": 0, "slot_counts": [2], "gpus": [],
    }  # fmt: skip
    for name in ("cluster.json", "trial.json", "rendezvous.json", "resources.json"):
        theirs = json.loads((out / name).read_text())
        ours = json.loads((src / name).read_text())
        assert ours == theirs, name  # same keys, same values, as their `_to_file` writes them
