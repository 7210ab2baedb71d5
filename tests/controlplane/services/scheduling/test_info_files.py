"""The info/*.json files each container gets: built by the master from the trial and the
placement, completed by the agent with its own facts, read back by our harness.

(The real determined package reading them is tests/compat/test_determined_info_files.py.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.protocol import Device, DeviceType, TaskSpec
from agent.run_dir import prepare_run_dir
from agent.task_env import AgentEnv, task_environment, task_files
from controlplane.domain import task_info
from controlplane.services.scheduling.apply import info_files
from controlplane.services.trial_launch import TrialLaunchInputs, build_trial_launch
from harness import _info

CONFIG = {
    "entrypoint": "python3 train.py",
    "debug": True,
    "data": {"url": "x"},
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/ckpt"},
    "searcher": {"name": "single", "metric": "loss", "max_length": 10},
}
CLUSTER_KEYS = {
    "master_url", "cluster_id", "agent_id", "slot_ids", "task_id", "allocation_id",
    "session_token", "task_type", "master_cert_name", "master_cert_file", "latest_checkpoint",
}  # fmt: skip


def inputs(**extra: Any) -> TrialLaunchInputs:
    base: dict[str, Any] = {
        "task_id": "3.1",
        "trial_id": 7,
        "experiment_id": 3,
        "config": CONFIG,
        "hparams": {"lr": 0.1},
        "seed": 42,
        "run_id": 2,
        "username": "alice",
        "latest_checkpoint": "ckpt-uuid",
        "steps_completed": 40,
    }
    return TrialLaunchInputs(**{**base, **extra})


def container_spec(
    devices: tuple[Device, ...] = (Device(id=0), Device(id=1)), containers: int = 1
) -> TaskSpec:
    """What the scheduler sends for the trial's first container, as apply.start_messages does."""
    launch = build_trial_launch(inputs())
    env = {
        **launch.environment,
        "DET_ALLOCATION_ID": "3.1.2",
        "DET_RESOURCES_ID": "3.1.2-0",
        "DET_CONTAINER_ID": "3.1.2-0",
        "DET_SESSION_TOKEN": "secret-token",
    }
    files = info_files(
        env, agent_id="a1", devices=devices, num_containers=containers, address="10.1.2.3"
    )
    return TaskSpec(
        allocation_id="3.1.2", task_id="3.1", task_type="TRIAL", slots=len(devices),
        environment=env, files={**launch.files, **files},
    )  # fmt: skip


def test_trial_json_carries_the_trial_as_its_variables_do() -> None:
    launch = build_trial_launch(inputs())
    trial = json.loads(launch.files[task_info.TRIAL_FILE])
    assert trial == {
        "trial_id": 7,
        "experiment_id": 3,
        "trial_seed": 42,
        "hparams": {"lr": 0.1},
        "config": CONFIG,
        "steps_completed": 40,
        "trial_run_id": 2,
        "debug": True,
        "inter_node_network_interface": None,
    }
    env = launch.environment
    assert (env["DET_TRIAL_ID"], env["DET_STEPS_COMPLETED"]) == ("7", "40")
    # A device-specific spec keeps the files.
    assert launch.for_device("cpu").files == launch.files


def test_master_files_of_a_one_container_trial() -> None:
    gpu = Device(id=3, uuid="GPU-abc", type=DeviceType.CUDA)
    spec = container_spec(devices=(gpu,))
    assert set(spec.files) == {
        "info/cluster.json", "info/trial.json", "info/resources.json", "info/rendezvous.json",
    }  # fmt: skip
    cluster = json.loads(spec.files["info/cluster.json"])
    assert set(cluster) == CLUSTER_KEYS
    assert cluster["task_id"] == "3.1" and cluster["allocation_id"] == "3.1.2"
    assert cluster["session_token"] == "secret-token" and cluster["task_type"] == "TRIAL"
    assert cluster["agent_id"] == "a1" and cluster["slot_ids"] == [3]
    assert cluster["latest_checkpoint"] == "ckpt-uuid"
    # Only the agent knows how its tasks reach the master.
    assert cluster["master_url"] == "" and cluster["cluster_id"] == ""
    assert json.loads(spec.files["info/resources.json"]) == {"gpu_uuids": ["GPU-abc"]}
    assert json.loads(spec.files["info/rendezvous.json"]) == {
        "container_addrs": ["10.1.2.3"], "container_rank": 0, "container_slot_counts": [1],
    }  # fmt: skip


def test_a_multi_container_trial_leaves_the_rendezvous_to_its_launcher() -> None:
    spec = container_spec(containers=2)
    assert "info/rendezvous.json" not in spec.files
    assert json.loads(spec.files["info/resources.json"]) == {"gpu_uuids": []}


def test_a_command_gets_cluster_and_resources_but_no_trial_files() -> None:
    env = {
        "DET_TASK_ID": "cmd-1", "DET_ALLOCATION_ID": "cmd-1.1", "DET_SESSION_TOKEN": "t",
        "DET_TASK_TYPE": "COMMAND",
    }  # fmt: skip
    files = info_files(env, agent_id="a1", devices=(), num_containers=1, address="127.0.0.1")
    assert set(files) == {"info/cluster.json", "info/resources.json"}
    cluster = json.loads(files["info/cluster.json"])
    assert cluster["slot_ids"] == [] and cluster["latest_checkpoint"] is None


def test_the_agent_completes_cluster_json_with_its_own_facts(tmp_path: Path) -> None:
    from agent.protocol import MasterInfo

    spec = container_spec()
    devices = (Device(id=0), Device(id=1))
    agent = AgentEnv(agent_id="a1", master_host="127.0.0.1", master_port=8089)
    master = MasterInfo(version="1", master_id="m", cluster_id="cluster-9", cluster_name="c")
    env = task_environment(spec, "3.1.2-0", devices, agent, master)
    files = task_files(spec, env)
    cluster = json.loads(files["info/cluster.json"])
    assert cluster["master_url"] == "http://127.0.0.1:8089"
    assert cluster["cluster_id"] == "cluster-9"
    assert cluster["agent_id"] == "a1" and cluster["slot_ids"] == [0, 1]
    assert set(cluster) == CLUSTER_KEYS
    assert files["info/trial.json"] == spec.files["info/trial.json"]  # untouched

    # Written into the run dir, our harness reads them as a task would (process runtime: the
    # run dir is not /run/determined; DET_RUN_DIR says where it is).
    run_dir = tmp_path / "run"
    prepare_run_dir(run_dir, files)
    from_files = _info.get_cluster_info({"DET_RUN_DIR": str(run_dir)})
    assert from_files is not None
    assert from_files.master_url == "http://127.0.0.1:8089"
    assert from_files.trial.trial_id == 7 and from_files.trial.hparams == {"lr": 0.1}
    assert from_files.latest_checkpoint == "ckpt-uuid"
    assert from_files.container_addrs == ["10.1.2.3"] and from_files.gpu_uuids == []
    from_env = _info.get_cluster_info({**env, "DET_RUN_DIR": str(run_dir)})
    assert from_env is not None and from_env.trial == from_files.trial


def test_specs_without_cluster_json_pass_through_unchanged() -> None:
    spec = TaskSpec(allocation_id="a", task_id="t", task_type="COMMAND", files={"x.txt": "hi"})
    assert task_files(spec, {"DET_MASTER": "http://m:1"}) == {"x.txt": "hi"}
    broken = spec.model_copy(update={"files": {"info/cluster.json": "{not json"}})
    assert task_files(broken, {"DET_MASTER": "http://m:1"}) == broken.files
