"""What only the docker runtime has to get right: the container options it asks the engine for,
shared memory, image entrypoints, and choosing a runtime by whether an engine answers."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from agent.protocol import Device, DeviceType, Mount, TaskUser
from agent.runtimes import choose_runtime, docker_available, make_runtime
from agent.runtimes.base import LaunchFailed, RunRequest
from tests.support.docker_image import ensure_test_image

docker_sdk = pytest.importorskip("docker")
from agent.runtimes.docker import DockerRuntime, create_options  # noqa: E402

_NO_ENGINE = None if docker_available() else "no Docker engine answers on this machine"
needs_engine = pytest.mark.skipif(_NO_ENGINE is not None, reason=str(_NO_ENGINE))


def request(tmp: Path, *argv: str, **fields: object) -> RunRequest:
    return RunRequest(
        container_id=f"d{uuid.uuid4().hex[:10]}-0",
        agent_id="docker-only-tests",
        argv=argv,
        run_dir=tmp / "run",
        **fields,  # type: ignore[arg-type]
    )


class TestCreateOptions:
    def test_host_network_init_labels_and_the_run_dir(self, tmp_path: Path) -> None:
        req = request(
            tmp_path,
            "python3",
            "-m",
            "harness.exec.launch",
            image="img:1",
            environment={"A": "1"},
            mounts=(Mount(host_path="/data", container_path="/mnt/d", read_only=True),),
            shm_size_bytes=1 << 26,
        )
        options = create_options(req, tmp_path / "run")
        assert options["image"] == "img:1"
        assert options["entrypoint"] == ["python3"]
        assert options["command"] == ["-m", "harness.exec.launch"]
        assert options["network_mode"] == "host"
        assert options["init"] is True
        assert options["shm_size"] == 1 << 26
        assert options["working_dir"] == "/run/determined/workdir"
        assert options["labels"]["ai.determined.container.id"] == req.container_id
        assert options["labels"]["ai.determined.container.agent"] == "docker-only-tests"
        env = options["environment"]
        assert (env["A"], env["DET_RUN_DIR"]) == ("1", "/run/determined")
        assert env["PYTHONPATH"] == "/run/determined/pylib"
        mounts = {m["Target"]: m for m in options["mounts"]}
        assert mounts["/run/determined"]["Source"] == str(tmp_path / "run")
        assert mounts["/run/determined"]["ReadOnly"] is False
        assert (mounts["/mnt/d"]["Source"], mounts["/mnt/d"]["ReadOnly"]) == ("/data", True)
        assert "device_requests" not in options

    def test_a_task_user_runs_the_container_as_uid_gid(self, tmp_path: Path) -> None:
        user = TaskUser(uid=61001, gid=61000, user="alice", group="ml", owner="alice")
        options = create_options(request(tmp_path, "true", image="i", user=user), tmp_path)
        assert options["user"] == "61001:61000"  # numbers: no passwd entry needed in the image
        assert options["environment"]["HOME"] == "/run/determined/home"
        mine = request(tmp_path, "true", image="i", user=user, environment={"HOME": "/h"})
        assert create_options(mine, tmp_path)["environment"]["HOME"] == "/h"
        plain = create_options(request(tmp_path, "true", image="i"), tmp_path)
        assert "user" not in plain and "HOME" not in plain["environment"]

    def test_cuda_devices_become_a_gpu_request_and_host_indices_are_dropped(
        self, tmp_path: Path
    ) -> None:
        gpus = (
            Device(id=0, uuid="GPU-aaaa", type=DeviceType.CUDA),
            Device(id=2, type=DeviceType.CUDA),
        )
        req = request(
            tmp_path,
            "true",
            image="i",
            devices=gpus,
            environment={"CUDA_VISIBLE_DEVICES": "0,2"},
        )
        options = create_options(req, tmp_path)
        [gpu_request] = options["device_requests"]
        assert gpu_request["DeviceIDs"] == ["GPU-aaaa", "2"]
        assert gpu_request["Capabilities"] == [["gpu"]]
        assert "CUDA_VISIBLE_DEVICES" not in options["environment"]
        assert options["labels"]["ai.determined.container.devices"] == "0,2"


@needs_engine
class TestAgainstTheEngine:
    @pytest.fixture
    async def runtime(self):
        rt = DockerRuntime()
        yield rt
        for found in await rt.find("docker-only-tests"):
            await rt.remove(found.container_id)
        await rt.close()

    async def test_shm_size_is_applied(self, runtime: DockerRuntime, tmp_path: Path) -> None:
        image = ensure_test_image()
        program = (
            "import os, sys; s = os.statvfs('/dev/shm'); "
            "sys.exit(0 if s.f_blocks * s.f_frsize == 96 * 2**20 else 1)"
        )
        req = request(
            tmp_path,
            "python3",
            "-c",
            program,
            image=image.name,
            mounts=image.mounts,
            shm_size_bytes=96 * 2**20,
        )
        await runtime.start(req)
        assert await runtime.wait(req.container_id) == 0

    async def test_an_images_entrypoint_does_not_wrap_the_task(
        self, runtime: DockerRuntime, tmp_path: Path
    ) -> None:
        image = ensure_test_image()
        client = docker_sdk.from_env()
        tag = f"resolute-test-entrypoint:{uuid.uuid4().hex[:8]}"
        base = client.containers.create(image.name, command=["true"])
        try:
            base.commit(*tag.split(":"), changes=['ENTRYPOINT ["/bin/false"]'])
        finally:
            base.remove()
        try:
            req = request(
                tmp_path,
                "python3",
                "-c",
                "raise SystemExit(6)",
                image=tag,
                mounts=image.mounts,
            )
            await runtime.start(req)
            assert await runtime.wait(req.container_id) == 6
        finally:
            await runtime.remove(req.container_id)
            client.images.remove(tag, force=True)
            client.close()

    async def test_a_bad_bind_mount_is_a_launch_failure(
        self, runtime: DockerRuntime, tmp_path: Path
    ) -> None:
        image = ensure_test_image()
        missing = Mount(host_path=str(tmp_path / "nope"), container_path="/mnt/x")
        req = request(
            tmp_path, "python3", "-c", "pass", image=image.name, mounts=(*image.mounts, missing)
        )
        with pytest.raises(LaunchFailed, match="nope"):
            await runtime.start(req)
        assert await runtime.find("docker-only-tests") == []


class TestChoosingARuntime:
    @needs_engine
    def test_auto_picks_docker_when_an_engine_answers(self) -> None:
        assert choose_runtime("auto") == "docker"

    def test_auto_picks_process_when_none_answers(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        assert not docker_available()
        assert choose_runtime("auto") == "process"

    async def test_a_named_runtime_is_taken_as_asked(self, tmp_path: Path) -> None:
        assert choose_runtime("process") == "process"
        assert choose_runtime("docker") == "docker"
        for name in ("process", "docker"):
            runtime = make_runtime(name, state_dir=tmp_path)
            assert runtime.name == name
            await runtime.close()
        with pytest.raises(ValueError, match="unknown container runtime"):
            choose_runtime("podman")
        with pytest.raises(ValueError, match="unknown container runtime"):
            make_runtime("auto", state_dir=tmp_path)
