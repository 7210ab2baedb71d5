"""What a task is given: its environment, command and run directory; plus the report queue."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from pathlib import Path

import pytest

from agent.container_labels import allocation_of
from agent.containers import parse_signal
from agent.outbox import Outbox
from agent.protocol import Device, DeviceType, Heartbeat, MasterInfo, TaskSpec
from agent.run_dir import (
    RunDirError,
    SharedPylibs,
    harness_source,
    prepare_run_dir,
    safe_relative,
    shared_pylib,
)
from agent.task_env import AgentEnv, slot_ids, task_argv, task_environment

AGENT = AgentEnv(agent_id="a1", master_host="m.example", master_port=8080)
INFO = MasterInfo(version="v", master_id="mid", cluster_id="cid", cluster_name="n")
GPU0 = Device(id=0, uuid="GPU-0", type=DeviceType.CUDA)
GPU3 = Device(id=3, uuid="GPU-3", type=DeviceType.CUDA)
CPU = Device(id=0, uuid="cpu", type=DeviceType.CPU)


def spec(**env: str) -> TaskSpec:
    return TaskSpec(
        allocation_id="7.1",
        task_id="7",
        task_type="TRIAL",
        argv=("python3", "train.py"),
        environment={"DET_TASK_ID": "7", **env},
    )


class TestEnvironment:
    def test_agent_variables(self):
        env = task_environment(spec(), "7.1-0", [GPU0, GPU3], AGENT, INFO)
        assert env["DET_MASTER"] == "http://m.example:8080"
        assert (env["DET_MASTER_HOST"], env["DET_MASTER_ADDR"]) == ("m.example", "m.example")
        assert env["DET_MASTER_PORT"] == "8080"
        assert env["DET_AGENT_ID"] == "a1"
        assert env["DET_SLOT_IDS"] == "[0,3]"
        assert env["DET_CONTAINER_ID"] == "7.1-0"
        assert (env["DET_CLUSTER_ID"], env["DET_MASTER_ID"]) == ("cid", "mid")
        assert env["CUDA_VISIBLE_DEVICES"] == "GPU-0,GPU-3"

    def test_the_advertised_address_reaches_the_task(self):
        assert task_environment(spec(), "c", [], AGENT)["RESOLUTE_AGENT_ADDRESS"] == "127.0.0.1"
        agent = AgentEnv(agent_id="a", master_host="h", master_port=1, advertise_address="10.1.2.3")
        assert task_environment(spec(), "c", [], agent)["RESOLUTE_AGENT_ADDRESS"] == "10.1.2.3"

    def test_tls_gives_https(self):
        tls = AgentEnv(agent_id="a", master_host="h", master_port=443, use_tls=True)
        assert task_environment(spec(), "c", [], tls)["DET_MASTER"] == "https://h:443"

    @pytest.mark.parametrize(
        ("devices", "hides", "expected"),
        [([CPU], False, None), ([CPU], True, ""), ([], True, ""), ([GPU3], True, "GPU-3")],
    )
    def test_cuda_visibility(self, devices, hides: bool, expected: str | None):
        agent = AgentEnv(agent_id="a", master_host="h", master_port=1, hides_gpus=hides)
        env = task_environment(spec(), "c", devices, agent)
        assert env.get("CUDA_VISIBLE_DEVICES") == expected

    def test_precedence_proxies_then_spec_then_agent(self):
        agent = AgentEnv(
            agent_id="a",
            master_host="h",
            master_port=1,
            proxies={"http_proxy": "http://agent:1", "no_proxy": "", "https_proxy": "s"},
        )
        env = task_environment(
            spec(http_proxy="http://user:2", DET_MASTER="http://user-wins-not"), "c", [], agent
        )
        assert env["http_proxy"] == "http://user:2"  # the user's own setting wins
        assert env["HTTP_PROXY"] == "http://agent:1"
        assert env["https_proxy"] == env["HTTPS_PROXY"] == "s"
        assert "no_proxy" not in env and "NO_PROXY" not in env
        assert env["DET_MASTER"] == "http://h:1"  # where the master is, the agent knows

    def test_master_ids_from_spec_are_kept(self):
        env = task_environment(spec(DET_CLUSTER_ID="from-master"), "c", [], AGENT, INFO)
        assert env["DET_CLUSTER_ID"] == "from-master"

    def test_slot_ids_format(self):
        assert slot_ids([]) == "[]"
        assert slot_ids([CPU]) == "[0]"

    def test_argv_wraps_the_users_command_in_the_launcher(self):
        assert task_argv(spec(), "python3") == (
            "python3",
            "-S",
            "-c",
            "import sys;from harness.exec.launch import main;sys.exit(main())",
            "python3",
            "train.py",
        )

    def test_the_wrapped_command_runs_without_runpy(self, tmp_path: Path):
        """The argv runs the launcher (the child's exit code comes back) and skips `-m`'s
        runpy, which cost every task ~3 ms of CPU before the launcher's first line."""
        import subprocess
        import sys

        wrapped = spec().model_copy(update={"argv": (sys.executable, "-c", "raise SystemExit(3)")})
        python, *flags = task_argv(wrapped, sys.executable)
        repo = str(Path(__file__).resolve().parents[2])
        proc = subprocess.run(
            [python, "-X", "importtime", *flags],
            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": repo},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        imported = {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines()}
        assert proc.returncode == 3, proc.stderr
        assert "harness.exec.launch" in imported
        assert "runpy" not in imported


class TestRunDir:
    def test_files_and_workdir(self, tmp_path: Path):
        run_dir = tmp_path / "runs" / "c-0"
        prepare_run_dir(run_dir, {"info/trial.json": "{}", "a.txt": "x"})
        assert (run_dir / "workdir").is_dir()
        assert (run_dir / "info" / "trial.json").read_text() == "{}"
        assert (run_dir / "a.txt").read_text() == "x"

    def test_a_stale_run_dir_is_replaced(self, tmp_path: Path):
        run_dir = tmp_path / "r"
        (run_dir / "workdir").mkdir(parents=True)
        (run_dir / "workdir" / "old").write_text("from an earlier try")
        prepare_run_dir(run_dir, {})
        assert list((run_dir / "workdir").iterdir()) == []

    def test_the_harness_library_is_made_once_compiled_and_read_only(self, tmp_path: Path):
        source = tmp_path / "src" / "harness"
        shutil.copytree(harness_source(), source, ignore=shutil.ignore_patterns("__pycache__"))
        pylib = shared_pylib(tmp_path / "work", source)
        copied = pylib / "harness"
        assert (copied / "exec" / "launch.py").exists()
        assert list((copied / "exec" / "__pycache__").glob("launch.*.pyc"))
        assert not os.access(copied / "__init__.py", os.W_OK) or os.geteuid() == 0
        assert (copied / "__init__.py").stat().st_mode & 0o222 == 0
        # Python runs pylib's sitecustomize at every start of a task's interpreter
        assert (pylib / "sitecustomize.py").read_bytes() == (
            source / "_sitecustomize.py"
        ).read_bytes()
        assert list((pylib / "__pycache__").glob("sitecustomize.*.pyc"))
        assert (copied / "_compat" / "determined" / "core.py").exists()
        assert shared_pylib(tmp_path / "work", source) == pylib  # reused, not copied again

        (source / "extra.py").write_text("X = 1\n")  # another harness version
        other = shared_pylib(tmp_path / "work", source)
        assert other != pylib and (other / "harness" / "extra.py").exists()
        assert not (pylib / "harness" / "extra.py").exists()

    def test_a_running_agent_reads_the_harness_digest_again_only_after_a_while(
        self, tmp_path: Path
    ):
        source = tmp_path / "src" / "harness"
        shutil.copytree(harness_source(), source, ignore=shutil.ignore_patterns("__pycache__"))
        now = [100.0]
        asked: list[Path] = []

        def harness() -> Path:
            asked.append(source)
            return source

        pylibs = SharedPylibs(tmp_path / "work", harness, recheck_s=2.0, clock=lambda: now[0])
        first = pylibs()
        (source / "extra.py").write_text("X = 1\n")  # an edit, within the recheck time
        now[0] += 1.9
        assert pylibs() == first and len(asked) == 1  # no digest taken
        now[0] += 0.2
        second = pylibs()
        assert second != first and (second / "harness" / "extra.py").exists()
        shutil.rmtree(tmp_path / "work" / "pylib")  # removed under a running agent
        third = pylibs()
        assert third == second and (third / "harness" / "extra.py").exists()

    @pytest.mark.parametrize("name", ["", "/etc/passwd", "../x", "a/../../x", "pylib/harness/x"])
    def test_unsafe_file_names(self, name: str):
        with pytest.raises(RunDirError):
            safe_relative(name)

    def test_harness_is_found_without_importing_it(self):
        assert (harness_source() / "__init__.py").exists()


class TestSmallParts:
    @pytest.mark.parametrize(
        ("name", "number"),
        [
            ("SIGKILL", 9),
            ("KILL", 9),
            ("sigterm", int(signal.SIGTERM)),
            ("15", 15),
            ("SIGNOPE", None),
            ("", None),
            ("¹", None),  # a digit to str.isdigit(), not to int()
        ],
    )
    def test_parse_signal(self, name: str, number: int | None):
        assert parse_signal(name) == number

    @pytest.mark.parametrize(
        ("cid", "labels", "allocation"),
        [
            ("7.1-0", {}, "7.1"),
            ("a-b.2-13", {}, "a-b.2"),
            ("x-0", {"ai.determined.container.allocation": "y.1"}, "y.1"),
        ],
    )
    def test_allocation_of(self, cid: str, labels: dict[str, str], allocation: str):
        assert allocation_of(cid, labels) == allocation

    async def test_outbox_keeps_unsent_messages_in_order(self):
        box = Outbox()
        sent: list[str] = []
        box.put(Heartbeat(), on_sent=lambda: sent.append("first"))
        box.put(Heartbeat(), on_sent=lambda: sent.append("second"))
        head = await box.head()
        assert await box.head() is head  # not taken until sent
        box.sent(head)
        assert sent == ["first"] and len(box) == 1
        dropped = box.retain(lambda m: False)
        assert len(dropped) == 1 and len(box) == 0
        waiter = asyncio.ensure_future(box.head())
        await asyncio.sleep(0)
        assert not waiter.done()
        box.put(Heartbeat())
        assert (await asyncio.wait_for(waiter, 1)).message == Heartbeat()
