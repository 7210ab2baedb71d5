"""harness.launch.torch_distributed: one process per slot through torch.distributed.run, on one
node and on two nodes (two launchers on this machine, as two containers of one trial)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import _info
from harness.launch import torch_distributed as td
from harness.launch import wrap_rank

REPO = Path(__file__).resolve().parents[3]
WORKER = """
import os, sys
import torch.distributed as dist
import harness as det
dist.init_process_group("gloo")
ctx = det.core.DistributedContext.from_torch_distributed()
got = ctx.allgather((ctx.rank, ctx.local_rank, ctx.cross_rank))
print("OUT", ctx.rank, ctx.size, ctx.cross_size, os.environ["DET_CHIEF_IP"], got, flush=True)
ctx.close()
dist.destroy_process_group()
sys.exit(int(os.environ.get("FAIL_RANK", "-1") == os.environ["RANK"]) * 3)
"""


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    return {**env, "PYTHONPATH": str(REPO), "DET_INFO_DIR": str(tmp_path / "none"), **extra}


def launcher(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.launch.torch_distributed",
            *args,
            sys.executable,
            str(script),
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def outputs(text: str) -> list[list[Any]]:
    """The workers' OUT lines, each with its [rank=N] prefix."""
    return sorted(line.split() for line in text.splitlines() if "OUT" in line)


def test_one_node_two_processes(tmp_path: Path) -> None:
    proc = launcher(tmp_path, env_for(tmp_path, DET_SLOT_IDS="[0,1]"))
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    lines = outputs(out)
    assert [x[:5] for x in lines] == [
        ["[rank=0]", "OUT", "0", "2", "1"],
        ["[rank=1]", "OUT", "1", "2", "1"],
    ]
    assert all(x[5] == "127.0.0.1" for x in lines)


def test_two_nodes_on_one_machine(tmp_path: Path) -> None:
    """Two launchers, each told its container rank by rendezvous.json; one process each."""
    port = str(td.free_port())
    procs = []
    for rank in (0, 1):
        info = tmp_path / f"info{rank}"
        info.mkdir()
        _info.RendezvousInfo(["127.0.0.1", "127.0.0.1"], rank, [1, 1])._to_file(
            info / "rendezvous.json"
        )
        env = env_for(tmp_path, DET_SLOT_IDS="[0]", DET_INFO_DIR=str(info), C10D_PORT=port)
        procs.append(launcher(tmp_path, env))
    texts = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out
        texts.append(out)
    first, second = outputs(texts[0]), outputs(texts[1])
    assert [x[:5] for x in first] == [["[rank=0]", "OUT", "0", "2", "2"]]
    assert [x[:5] for x in second] == [["[rank=1]", "OUT", "1", "2", "2"]]
    # (rank, local rank, node) of everyone, as each worker gathered it
    assert "".join(first[0][6:]) == "[(0,0,0),(1,0,1)]" == "".join(second[0][6:])


def test_a_failing_worker_fails_the_launch(tmp_path: Path) -> None:
    proc = launcher(tmp_path, env_for(tmp_path, DET_SLOT_IDS="[0,1]", FAIL_RANK="1"))
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0, out


# Pure parts.


def test_arguments_as_determined_splits_them() -> None:
    assert td.parse_args(["python3", "train.py", "--lr", "1"]) == (
        [],
        ["python3", "train.py", "--lr", "1"],
    )
    assert td.parse_args(["--nproc_per_node", "4", "--", "python3", "t.py"]) == (
        ["--nproc_per_node", "4"],
        ["python3", "t.py"],
    )
    overrides, script = td.parse_args(["--trial", "model_def:MyTrial"])
    assert overrides == [] and script[1:] == ["-m", "harness.pytorch._legacy", "model_def:MyTrial"]
    with pytest.raises(SystemExit):
        td.parse_args([])
    with pytest.raises(SystemExit):
        td.parse_args(["--trial", "m:T", "python3", "x.py"])


class FakeSession:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.paths: list[str] = []

    def get(self, path: str, **kw: Any) -> Any:
        self.paths.append(path)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


CLUSTER = {
    "DET_MASTER": "http://127.0.0.1:1",
    "DET_TASK_ID": "t",
    "DET_ALLOCATION_ID": "t.1",
    "DET_SESSION_TOKEN": "tok",
    "DET_TASK_TYPE": "TRIAL",
    "DET_RESOURCES_ID": "t.1-1",
    "DET_SLOT_IDS": "[0,1]",
    "DET_INFO_DIR": "/nonexistent",
}


def test_layout_from_the_masters_rendezvous() -> None:
    answer = {"rendezvousInfo": {"addresses": ["10.0.0.1", "10.0.0.2"], "rank": 1, "slots": [2, 2]}}
    session = FakeSession(answer)
    layout = td.find_layout(CLUSTER, session)
    assert session.paths == ["/api/v1/allocations/t.1/resources/t.1-1/rendezvous"]
    assert layout == td.Layout(addrs=["10.0.0.1", "10.0.0.2"], rank=1, slots=2)
    assert layout.chief == "10.0.0.1"
    port = td.choose_port(CLUSTER, layout)
    assert port == td.choose_port(dict(CLUSTER, DET_RESOURCES_ID="t.1-0"), layout)
    assert td.C10D_PORT <= port < td.C10D_PORT + td.PORT_SPREAD
    assert td.choose_port(dict(CLUSTER, C10D_PORT="29999"), layout) == 29999
    argv = td.launch_argv(layout, 29500, ["--foo"], ["python3", "t.py"], "py")
    assert argv[:3] == ["py", "-m", "torch.distributed.run"]
    assert argv[3:15] == [
        "--nnodes", "2", "--nproc_per_node", "2", "--node_rank", "1",
        "--max_restarts", "0", "--master_addr", "10.0.0.1", "--master_port", "29500",
    ]  # fmt: skip
    assert argv[15:] == [
        "--foo",
        "--module",
        "harness.launch.wrap_rank",
        "RANK",
        "--",
        "python3",
        "t.py",
    ]


def test_uneven_slots_and_master_errors_are_clear() -> None:
    uneven = {"rendezvousInfo": {"addresses": ["a", "b"], "rank": 0, "slots": [2, 1]}}
    with pytest.raises(td.LaunchError, match="different slot counts"):
        td.find_layout(CLUSTER, FakeSession(uneven))
    refused = td.APIError("GET", "/x", 500, "some containers are taking a long time to connect")
    with pytest.raises(td.LaunchError, match="taking a long time"):
        td.find_layout(CLUSTER, FakeSession(refused))
    with pytest.raises(td.LaunchError, match="DET_SLOT_IDS"):
        td.find_layout({"DET_SLOT_IDS": "0,1"})


def test_off_cluster_is_this_machine_alone() -> None:
    assert td.find_layout({"DET_INFO_DIR": "/nonexistent"}) == td.Layout(["127.0.0.1"], 0, 1)


def test_wrap_rank_prefixes_lines_and_keeps_the_exit_code(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "3")
    code = wrap_rank.main(
        [
            "RANK",
            "--",
            sys.executable,
            "-c",
            "import sys; print('a'); print('b', file=sys.stderr); sys.exit(4)",
        ]
    )
    out, err = capfd.readouterr()
    assert code == 4 and out == "[rank=3] a\n" and err == "[rank=3] b\n"
    assert wrap_rank.main(["RANK"]) == 2
    assert wrap_rank.main(["RANK", "--", "/nonexistent/x"]) == 127
