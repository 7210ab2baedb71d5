"""DistributedContext: rank bookkeeping, the launchers' variables, and real collectives between
worker processes on 127.0.0.1 (gloo process groups through torch.distributed)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import types
from pathlib import Path

import pytest

import harness as det

pytest.importorskip("torch")

WORKER = Path(__file__).with_name("dist_worker.py")
REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_workers(mode: str, layout: list[int], extra: dict[str, str]) -> list[dict]:
    """One process per worker; ``layout[n]`` workers on simulated node n. Results by rank."""
    size = sum(layout)
    procs = []
    rank = 0
    for node, count in enumerate(layout):
        for local in range(count):
            env = {
                **os.environ,
                "PYTHONPATH": str(REPO),
                "RANK": str(rank),
                "WORLD_SIZE": str(size),
                "LOCAL_RANK": str(local),
                "LOCAL_WORLD_SIZE": str(count),
                "GROUP_RANK": str(node),
                "GROUP_WORLD_SIZE": str(len(layout)),
                "DET_CHIEF_IP": "127.0.0.1",
                # what Determined's deepspeed launcher and mpirun export
                "OMPI_COMM_WORLD_LOCAL_SIZE": str(count),
                "CROSS_RANK": str(node),
                **extra,
            }
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(WORKER), mode],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
            rank += 1
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-3000:]
            line = next(x for x in out.splitlines() if x.startswith("RESULT "))
            results.append(json.loads(line[len("RESULT ") :]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    return results


def test_two_nodes_of_two_every_collective() -> None:
    """Two simulated nodes of two workers; the context sets torch.distributed up itself."""
    results = run_workers("own", [2, 2], {"STORE_PORT": str(free_port())})
    everyone = [{"rank": r, "local": r % 2, "node": r // 2} for r in range(4)]
    for rank, res in enumerate(results):
        node = rank // 2
        node_ranks = [2 * node, 2 * node + 1]
        assert res["me"] == everyone[rank]
        assert res["sizes"] == [4, 2, 2]
        assert res["allgather"] == everyone
        assert res["gather"] == ([0, 10, 20, 30] if rank == 0 else None)
        assert res["broadcast"] == {"from": 0}
        assert res["allgather_local"] == node_ranks
        assert res["gather_local"] == (node_ranks if rank % 2 == 0 else None)
        assert res["broadcast_local"] == f"node{node}-rank{node_ranks[0]}"
        assert res["again"] == [[r] * r for r in range(4)]
        assert res["big"] == 3_000_000


def test_after_the_programs_own_init_from_openmpi_variables() -> None:
    """DDP code initialises torch.distributed first; the context adds its gloo groups beside the
    program's default group and leaves that group to the program. Uneven nodes: 2 + 1."""
    port = str(free_port())
    extra = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "CROSS_SIZE": "2"}
    results = run_workers("user-init", [2, 1], extra)
    for rank, res in enumerate(results):
        assert res["sizes"] == [3, 2 if rank < 2 else 1, 2]
        assert [x["rank"] for x in res["allgather"]] == [0, 1, 2]
        assert res["gather"] == ([0, 10, 20] if rank == 0 else None)
        local = [0, 1] if rank < 2 else [2]
        assert res["allgather_local"] == local
        assert res["gather_local"] == (local if rank in (0, 2) else None)
        assert res["broadcast_local"] == f"node{rank // 2}-rank{local[0]}"
        assert res["still_initialised"] is True


# The variables the launchers export, read without starting any process group (size 1 or
# invalid input fails before any collective).


def test_from_torch_distributed_under_torchrun_before_any_init(tmp_path: Path) -> None:
    """Determined's Trainer examples build the context before pytorch.init. Under torchrun
    (whose workers join its agent store) the context's own TCP store address was waited for
    until the 30-minute timeout."""
    done = subprocess.run(
        [
            sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
            "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
            str(WORKER), "torchrun",
        ],
        env={**os.environ, "PYTHONPATH": str(REPO), "RESULT_DIR": str(tmp_path)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    # one file per rank: both workers print to torchrun's stdout, where their lines can interleave
    lines = [p.read_text() for p in sorted(tmp_path.glob("rank-*.txt"))]
    results = [json.loads(x[len("RESULT ") :]) for x in lines]
    assert sorted(r["me"]["rank"] for r in results) == [0, 1]
    for r in results:
        assert r["sizes"] == [2, 2, 1]
        assert r["allgather"] == [
            {"rank": 0, "local": 0, "node": 0},
            {"rank": 1, "local": 1, "node": 0},
        ]


def test_from_torch_distributed_reads_torchrun_variables() -> None:
    env = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}
    ctx = det.core.DistributedContext.from_torch_distributed(env=env)
    assert (ctx.get_rank(), ctx.get_size(), ctx.get_num_agents()) == (0, 1, 1)
    assert ctx.chief_ip == "127.0.0.1"  # one machine: the chief is localhost (Determined)
    assert ctx.allgather(5) == [5] and ctx.gather_local(1) == [1]
    assert ctx.broadcast_local("x") == "x" and ctx.allgather_local(2) == [2]


def test_from_deepspeed_falls_back_to_openmpi_variables() -> None:
    env = {
        "OMPI_COMM_WORLD_RANK": "0",
        "OMPI_COMM_WORLD_SIZE": "1",
        "OMPI_COMM_WORLD_LOCAL_RANK": "0",
        "OMPI_COMM_WORLD_LOCAL_SIZE": "1",
    }
    ctx = det.core.DistributedContext.from_deepspeed(env=env)
    assert (ctx.rank, ctx.size, ctx.cross_rank, ctx.cross_size) == (0, 1, 0, 1)


def test_from_horovod_asks_the_module() -> None:
    hvd = types.SimpleNamespace(
        rank=lambda: 0,
        size=lambda: 1,
        local_rank=lambda: 0,
        local_size=lambda: 1,
        cross_rank=lambda: 0,
        cross_size=lambda: 1,
    )
    ctx = det.core.DistributedContext.from_horovod(hvd)
    assert ctx.get_local_rank() == 0 and ctx.gather("a") == ["a"]


def test_missing_and_bad_variables_are_named() -> None:
    with pytest.raises(KeyError, match="LOCAL_WORLD_SIZE"):
        det.core.DistributedContext.from_torch_distributed(env={"RANK": "0", "WORLD_SIZE": "1"})
    bad = {"RANK": "zero", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}
    with pytest.raises(ValueError, match="RANK='zero'"):
        det.core.DistributedContext.from_torch_distributed(env=bad)


def test_several_machines_need_the_chief_address() -> None:
    with pytest.raises(ValueError, match="chief_ip"):
        det.core.DistributedContext(
            rank=1, size=2, local_rank=0, local_size=1, cross_rank=1, cross_size=2
        )


@pytest.mark.parametrize(
    ("ranks", "match"),
    [
        ((2, 2, 0, 1, 0, 1), "invalid ranks"),
        ((0, 2, 1, 1, 0, 1), "invalid ranks"),
        ((0, 1, 0, 2, 0, 1), "invalid sizes"),
    ],
)
def test_invalid_ranks(ranks: tuple[int, ...], match: str) -> None:
    names = ("rank", "size", "local_rank", "local_size", "cross_rank", "cross_size")
    with pytest.raises(ValueError, match=match):
        det.core.DistributedContext(**dict(zip(names, ranks, strict=True)))


def test_several_workers_without_torch_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    monkeypatch.delitem(sys.modules, "harness.pytorch._collectives", raising=False)
    with pytest.raises(RuntimeError, match="install torch in the task's image"):
        det.core.DistributedContext(
            rank=0, size=2, local_rank=0, local_size=2, cross_rank=0, cross_size=1
        )
