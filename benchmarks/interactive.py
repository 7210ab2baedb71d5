"""Interactive tasks: `python benchmarks/interactive.py [--quick]`.

On a `det deploy local` cluster (process runtime, one agent):
1. `det notebook start --no-browser` (our CLI, a fresh process each time) until JupyterLab
   answers through the master's proxy (`GET /proxy/{id}/api/status` is 200), N times;
2. the same Jupyter server's `GET …/api/status`, asked directly (its loopback port, from the
   task's log), through the task's gate (the address and secret the master holds) and through
   the proxy (which crosses the gate too), in the same run: one client for latency (p50, p99),
   several for throughput. The target: the proxy keeps >= 80 % of the direct throughput and adds
   <= 2 ms at p50.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` and our packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from benchmarks.loadgen import LoadResult, closed_loop, percentile
from benchmarks.local_cluster import REPO, Cluster, local_cluster


def det_env(cluster: Cluster) -> dict[str, str]:
    token = cluster.http.headers["Authorization"].split()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    return {
        **env, "DET_MASTER": cluster.url, "DET_USER": "admin", "DET_USER_TOKEN": token,
        "DET_DEBUG_CONFIG_PATH": tempfile.mkdtemp(prefix="bench-detcfg-"),
        "PYTHONPATH": str(REPO),
    }  # fmt: skip


async def start_notebook(cluster: Cluster) -> tuple[str, float]:
    """(task id, seconds from `det notebook start` to the proxied /api/status answering)."""
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", "-u", "admin", "notebook", "start", "--no-browser",
        env=det_env(cluster), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    if proc.returncode != 0:
        logs = ""
        if "det notebook logs " in err.decode():
            task = err.decode().split("det notebook logs ")[1].split()[0]
            logs = (await cluster.http.get(f"/api/v1/tasks/{task}/logs")).text[-3000:]
        raise RuntimeError(f"det notebook start failed: {err.decode()[-2000:]}\n{logs}")
    line = next(x for x in out.decode().splitlines() if "Connect to remote Jupyter" in x)
    task_id = line.rstrip("/").rsplit("/", 1)[1]
    while True:
        r = await cluster.http.get(f"/proxy/{task_id}/api/status")
        if r.status_code == 200:
            return task_id, time.perf_counter() - t0
        await asyncio.sleep(0.02)


def gate_address(data_dir: Path, task_id: str) -> tuple[str, str]:
    (db,) = list(data_dir.rglob("resolute.db"))[:1]
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT proxy_address, proxy_secret FROM allocations "
            "WHERE task_id = ? AND end_time IS NULL",
            (task_id,),
        ).fetchone()
    return str(row[0]), str(row[1])


async def jupyter_address(cluster: Cluster, task_id: str) -> str:
    """Jupyter's own port, from the line the task logs (logs arrive in batches: wait for it)."""
    deadline = time.monotonic() + 60
    while True:
        logs = (await cluster.http.get(f"/api/v1/tasks/{task_id}/logs")).text
        found = re.search(r"serves on (127\.0\.0\.1:\d+), behind the gate", logs)
        if found:
            return found.group(1)
        if time.monotonic() > deadline:
            raise SystemExit(f"the task's log does not name Jupyter's own port:\n{logs[-2000:]}")
        await asyncio.sleep(0.5)


async def load(base: str, path: str, clients: int, seconds: float, headers: dict) -> LoadResult:
    async def send(http: httpx.AsyncClient, client: int, seq: int) -> httpx.Response:
        return await http.get(path)

    return await closed_loop(base, clients, seconds, send, headers=headers)


def row(name: str, r: LoadResult) -> tuple[str, float, float, float]:
    return (name, r.requests_per_s, percentile(r.latencies_ms, 50),
            percentile(r.latencies_ms, 99))  # fmt: skip


async def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/interactive.py")
    p.add_argument("--quick", action="store_true", help="Fewer starts, shorter loads.")
    p.add_argument("--starts", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--clients", type=int, default=8)
    args = p.parse_args(argv)
    starts, seconds = (1, 4.0) if args.quick else (args.starts, args.seconds)
    with tempfile.TemporaryDirectory(prefix="bench-interactive-") as work:
        async with local_cluster(Path(work), agents=1, slots=1, runtime="process") as cluster:
            times = []
            task_id = ""
            for i in range(starts):
                task_id, took = await start_notebook(cluster)
                times.append(took)
                if i < starts - 1:
                    await cluster.post(f"/api/v1/notebooks/{task_id}/kill")
            direct = f"http://{await jupyter_address(cluster, task_id)}"
            address, secret = gate_address(cluster.data_dir, task_id)
            gate, key = f"http://{address}", {"X-Resolute-Proxy-Secret": secret}
            path = f"/proxy/{task_id}/api/status"
            auth = dict(cluster.http.headers)
            auth = {"Authorization": auth["authorization"]}
            results = {}
            for clients in (1, args.clients):
                await load(direct, path, clients, 1.0, {})  # warm all up
                await load(gate, path, clients, 1.0, key)
                await load(cluster.url, path, clients, 1.0, auth)
                results["direct", clients] = await load(direct, path, clients, seconds, {})
                results["gate", clients] = await load(gate, path, clients, seconds, key)
                results["proxy", clients] = await load(cluster.url, path, clients, seconds, auth)
            await cluster.post(f"/api/v1/notebooks/{task_id}/kill")
    print("\n`det notebook start` -> JupyterLab answering through the proxy (process runtime)")
    print(f"  runs: {', '.join(f'{t:.2f}s' for t in times)}; best {min(times):.2f}s, "
          f"median {sorted(times)[len(times) // 2]:.2f}s")  # fmt: skip
    print(f"\nGET /proxy/{{id}}/api/status: direct to Jupyter, through the task's gate, "
          f"through the master's proxy ({seconds:g}s per row)")  # fmt: skip
    print(f"  {'path':<8} {'clients':>7} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
    for (name, clients), r in results.items():
        _, rps, p50, p99 = row(name, r)
        print(f"  {name:<8} {clients:>7} {rps:>9.0f} {p50:>8.2f} {p99:>8.2f}")
    one_d, one_p = results["direct", 1], results["proxy", 1]
    many_d, many_p = results["direct", args.clients], results["proxy", args.clients]
    added = percentile(one_p.latencies_ms, 50) - percentile(one_d.latencies_ms, 50)
    share = many_p.requests_per_s / many_d.requests_per_s if many_d.requests_per_s else 0.0
    print(f"\n  added p50 latency (1 client): {added:.2f} ms "
          f"(target <= 2 ms: {'met' if added <= 2 else 'MISSED'})")  # fmt: skip
    print(f"  proxied throughput ({args.clients} clients): {share:.0%} of direct "
          f"(target >= 80 %: {'met' if share >= 0.8 else 'MISSED'})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
