"""What the master tells an agent to run for a trial: image, command, environment, mounts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.protocol import Device, DeviceType, Mount
from controlplane.services.scheduling.apply import DeviceSpecific, device_type_of
from controlplane.services.trial_launch import (
    DEFAULT_SHM_SIZE_BYTES,
    LaunchRefused,
    TrialLaunchInputs,
    build_trial_launch,
    entrypoint_argv,
    memory_bytes,
)
from tests.controlplane.services.scheduling.conftest import StartMaster, add_agent, submit
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import eventually

pytestmark = pytest.mark.no_docker_engine  # it names docker, starts no container


class TestEntrypointArgv:
    @pytest.mark.parametrize(
        ("entrypoint", "argv"),
        [
            ("python3 train.py", ("python3", "train.py")),
            ("python3 train.py --lr '0.1 0.2'", ("python3", "train.py", "--lr", "0.1 0.2")),
            (["python3", "a b.py"], ("python3", "a b.py")),
            ("python3 train.py && echo done", ("sh", "-c", "python3 train.py && echo done")),
            ("echo $HOME", ("sh", "-c", "echo $HOME")),
            ("FOO=1 python3 x.py", ("sh", "-c", "FOO=1 python3 x.py")),
            ("python3 x.py > out.txt", ("sh", "-c", "python3 x.py > out.txt")),
            ("python3 'unbalanced", ("sh", "-c", "python3 'unbalanced")),
            ("model_def:MyTrial", ("model_def:MyTrial",)),  # refused by the launcher
            (
                "python3 -m determined.launch.torch_distributed python3 train.py",
                ("python3", "-m", "harness.launch.torch_distributed", "python3", "train.py"),
            ),
            (
                ["python3", "-m", "determined.launch.torch_distributed", "--", "python3", "t.py"],
                ("python3", "-m", "harness.launch.torch_distributed", "--", "python3", "t.py"),
            ),
            (
                "cd src && python3 -m determined.launch.torch_distributed python3 t.py",
                ("sh", "-c", "cd src && python3 -m harness.launch.torch_distributed python3 t.py"),
            ),
            ("python3 determined.launch.torch_distributed", None),  # not a -m module: unchanged
        ],
    )
    def test_argv(self, entrypoint: Any, argv: tuple[str, ...] | None) -> None:
        expected = argv if argv is not None else tuple(entrypoint.split())
        assert entrypoint_argv(entrypoint) == expected

    @pytest.mark.parametrize("entrypoint", [None, "", [], "   "])
    def test_missing_entrypoint_is_refused(self, entrypoint: Any) -> None:
        with pytest.raises(LaunchRefused):
            entrypoint_argv(entrypoint)


class TestMemoryBytes:
    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (None, DEFAULT_SHM_SIZE_BYTES),
            (1000, 1000),
            ("4G", 4 * 1024**3),
            ("512MiB", 512 * 1024**2),
            ("1.5 GB", int(1.5 * 1024**3)),
            ("100b", 100),
            ("2k", 2048),
        ],
    )
    def test_sizes(self, value: Any, expected: int) -> None:
        assert memory_bytes(value) == expected

    def test_garbage_is_refused(self) -> None:
        with pytest.raises(LaunchRefused):
            memory_bytes("lots")


def _inputs(config: dict[str, Any], **kw: Any) -> TrialLaunchInputs:
    base: dict[str, Any] = {
        "task_id": "trial-7",
        "trial_id": 7,
        "experiment_id": 3,
        "config": config,
        "hparams": {"lr": 0.1, "opt": {"name": "sgd"}},
        "seed": 42,
        "run_id": 2,
        "username": "alice",
    }
    base.update(kw)
    return TrialLaunchInputs(**base)


CONFIG: dict[str, Any] = {
    "entrypoint": "python3 train.py",
    "resources": {"slots_per_trial": 2, "shm_size": "1G"},
    "environment": {
        "image": {"cpu": "img:cpu", "cuda": "img:cuda", "rocm": "img:rocm"},
        "environment_variables": {
            "cpu": ["MODE=cpu", "DET_TRIAL_ID=999"],
            "cuda": ["MODE=cuda", "NCCL_DEBUG=INFO"],
            "rocm": [],
        },
        "force_pull_image": True,
    },
    "bind_mounts": [{"host_path": "/data", "container_path": "/mnt/data", "read_only": True}],
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/ckpt", "storage_path": "x"},
    "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
}


class TestBuildTrialLaunch:
    def test_trial_variables(self) -> None:
        spec = build_trial_launch(_inputs(CONFIG, latest_checkpoint="abc", steps_completed=5))
        env = spec.environment
        assert env["DET_TASK_ID"] == "trial-7" and env["DET_TASK_TYPE"] == "TRIAL"
        assert env["DET_TRIAL_ID"] == "7" and env["DET_EXPERIMENT_ID"] == "3"
        assert env["DET_TRIAL_RUN_ID"] == "2" and env["DET_TRIAL_SEED"] == "42"
        assert env["DET_USER"] == "alice"
        assert env["DET_RESOURCES_TYPE"] == "docker-container"
        assert json.loads(env["DET_HPARAMS"]) == {"lr": 0.1, "opt": {"name": "sgd"}}
        assert json.loads(env["DET_EXPERIMENT_CONFIG"]) == CONFIG
        assert env["DET_LATEST_CHECKPOINT"] == "abc" and env["DET_STEPS_COMPLETED"] == "5"

    def test_no_checkpoint_no_variable(self) -> None:
        env = build_trial_launch(_inputs(CONFIG)).environment
        assert "DET_LATEST_CHECKPOINT" not in env and env["DET_STEPS_COMPLETED"] == "0"

    def test_container_settings(self) -> None:
        spec = build_trial_launch(_inputs(CONFIG))
        assert spec.argv == ("python3", "train.py")
        assert spec.force_pull is True
        assert spec.shm_size_bytes == 1024**3
        assert spec.mounts == (
            Mount(host_path="/data", container_path="/mnt/data", read_only=True),
            Mount(host_path="/ckpt", container_path="/determined_shared_fs"),
        )

    def test_own_mount_of_the_storage_path_wins(self) -> None:
        config = {
            **CONFIG,
            "bind_mounts": [{"host_path": "/other", "container_path": "/determined_shared_fs"}],
        }
        spec = build_trial_launch(_inputs(config))
        assert spec.mounts == (Mount(host_path="/other", container_path="/determined_shared_fs"),)

    def test_slots_pick_cuda_until_the_devices_are_known(self) -> None:
        spec = build_trial_launch(_inputs(CONFIG))
        assert spec.image == "img:cuda" and spec.environment["MODE"] == "cuda"
        zero = build_trial_launch(_inputs({**CONFIG, "resources": {"slots_per_trial": 0}}))
        assert zero.image == "img:cpu" and zero.environment["MODE"] == "cpu"

    @pytest.mark.parametrize(("device", "image", "mode"), [("cpu", "img:cpu", "cpu")])
    def test_devices_pick_the_image_and_variables(self, device: str, image: str, mode: str) -> None:
        spec = build_trial_launch(_inputs(CONFIG))
        assert isinstance(spec, DeviceSpecific)
        on_cpu = spec.for_device(device)
        assert on_cpu.image == image and on_cpu.environment["MODE"] == mode
        assert "NCCL_DEBUG" not in on_cpu.environment  # cuda's variables are gone
        # A user variable never overrides the master's trial variables.
        assert on_cpu.environment["DET_TRIAL_ID"] == "7"
        assert on_cpu.argv == spec.argv and on_cpu.mounts == spec.mounts

    def test_plain_image_and_variable_list(self) -> None:
        config = {
            **CONFIG,
            "environment": {"image": "one:img", "environment_variables": ["A=1", "A=2", "B=x=y"]},
        }
        spec = build_trial_launch(_inputs(config))
        assert isinstance(spec, DeviceSpecific)
        for device in ("cpu", "cuda"):
            env = spec.for_device(device).environment
            assert spec.for_device(device).image == "one:img"
            assert env["A"] == "2" and env["B"] == "x=y"  # later entries win

    @pytest.mark.parametrize(
        ("types", "expected"),
        [
            ((), "cpu"),
            ((DeviceType.CPU, DeviceType.CPU), "cpu"),
            ((DeviceType.CUDA,), "cuda"),
            ((DeviceType.ROCM,), "rocm"),
        ],
    )
    def test_device_type_of(self, types: tuple[DeviceType, ...], expected: str) -> None:
        devices = [Device(id=i, type=t) for i, t in enumerate(types)]
        assert device_type_of(devices) == expected


EXPERIMENT = """
name: launch-spec
entrypoint: python3 train.py --epochs 2
searcher:
  name: single
  metric: loss
  max_length: {batches: 10}
hyperparameters:
  lr: 0.25
  layers: {type: const, val: 3}
resources:
  slots_per_trial: 1
  shm_size: 256M
max_restarts: 3
environment:
  image: {cpu: "resolute/cpu:1", cuda: "resolute/cuda:1"}
  environment_variables:
    cpu: [FROM_USER=cpu-value, DET_TASK_ID=hijack]
    cuda: [FROM_USER=cuda-value]
bind_mounts:
  - {host_path: /tmp, container_path: /scratch, read_only: true}
checkpoint_storage:
  type: shared_fs
  host_path: /tmp/resolute-ckpt
  storage_path: runs
"""

TOKEN_HEADER = "Grpc-Metadata-x-allocation-token"


async def _only_start(agent: FakeAgent, count: int) -> Any:
    async def started() -> bool:
        return len(agent.started) >= count

    await eventually(started, timeout=10)
    return list(agent.started.values())[count - 1]


class TestStartContainerOfATrial:
    """Submit to a live master; the fake agent records the StartContainer it is sent."""

    async def test_first_and_restarted_allocation(
        self, start_master: StartMaster, agents: list[FakeAgent]
    ) -> None:
        m = await start_master()
        agent = await add_agent(m, agents, "agent-1", 1)
        exp = (await submit(m, EXPERIMENT))["experiment"]
        start = await _only_start(agent, 1)
        spec = start.spec
        trial = (await m.get(f"/api/v1/experiments/{exp['id']}/trials"))["trials"][0]

        # The fake agent's slots are cpu slots: the cpu image and the cpu variables.
        assert spec.image == "resolute/cpu:1"
        assert spec.argv == ("python3", "train.py", "--epochs", "2")
        assert spec.shm_size_bytes == 256 * 1024**2
        assert spec.force_pull is False
        assert spec.mounts == (
            Mount(host_path="/tmp", container_path="/scratch", read_only=True),
            Mount(host_path="/tmp/resolute-ckpt", container_path="/determined_shared_fs"),
        )
        env = spec.environment
        assert env["FROM_USER"] == "cpu-value"
        assert env["DET_TASK_ID"] == spec.task_id  # the user's DET_TASK_ID did not win
        assert env["DET_ALLOCATION_ID"] == spec.allocation_id == f"{spec.task_id}.1"
        assert env["DET_CONTAINER_ID"] == env["DET_RESOURCES_ID"] == start.container.id
        assert env["DET_TRIAL_ID"] == str(trial["id"])
        assert env["DET_EXPERIMENT_ID"] == str(exp["id"])
        assert env["DET_TRIAL_RUN_ID"] == "1"
        assert int(env["DET_TRIAL_SEED"]) >= 0
        assert env["DET_USER"] == "admin"
        assert json.loads(env["DET_HPARAMS"]) == {"lr": 0.25, "layers": 3}
        config = json.loads(env["DET_EXPERIMENT_CONFIG"])
        assert config["searcher"]["max_length"] == {"batches": 10}
        assert config["checkpoint_storage"]["host_path"] == "/tmp/resolute-ckpt"
        assert env["DET_STEPS_COMPLETED"] == "0"
        assert "DET_LATEST_CHECKPOINT" not in env

        # The trial reports a checkpoint with its own token, then its container fails.
        token = {TOKEN_HEADER: f"Bearer {env['DET_SESSION_TOKEN']}"}
        early, late = "00000000-0000-4000-8000-0000000000e4", "00000000-0000-4000-8000-0000000000e8"
        for uuid, steps in ((early, 4), (late, 8)):
            r = await m.http.post(
                "/api/v1/checkpoints",
                headers=token,
                json={
                    "uuid": uuid,
                    "state": "STATE_COMPLETED",
                    "resources": {"model.pt": "10"},
                    "metadata": {"steps_completed": steps},
                    "taskId": spec.task_id,
                    "allocationId": spec.allocation_id,
                },
            )
            assert r.status_code == 200, r.text
        await agent.exit(start.container.id, 1)

        # The restart resumes from the latest checkpoint, in a new run.
        again = (await _only_start(agent, 2)).spec
        assert again.allocation_id == f"{spec.task_id}.2"
        assert again.environment["DET_TRIAL_RUN_ID"] == "2"
        assert again.environment["DET_LATEST_CHECKPOINT"] == late
        assert again.environment["DET_STEPS_COMPLETED"] == "8"
        assert again.environment["DET_SESSION_TOKEN"] != env["DET_SESSION_TOKEN"]
        assert again.environment["DET_TRIAL_SEED"] == env["DET_TRIAL_SEED"]
