"""Interactive tasks: `python benchmarks/interactive.py [--quick]`.

On a `det deploy local` cluster (process runtime, one agent):
1. `det notebook start --no-browser` (our CLI, a fresh process each time) until JupyterLab
   answers through the master's proxy (`GET /proxy/{id}/api/status` is 200), N times;
2. the same Jupyter server's `GET …/api/status`, in the same run: directly (its loopback port,
   from the task's log), through the task's gate (the address and secret the master holds),
   through a zero-work TCP splice in front of the gate (benchmarks/splice.py: the floor for any
   Python hop in the master's place), and through the master's proxy (which crosses the gate
   too). One client for latency (p50, p99), several for throughput. The target: the proxy keeps
   >= 80 % of the direct throughput and adds <= 2 ms at p50.

Each row also reports every process's CPU per request (/proc/PID/stat): on a shared machine
throughput swings with what else runs, while CPU per request does not, and where the CPU is
the limit, the throughput ratio is the ratio of the total CPU per request ("by CPU").
Figures and what they mean: docs/interactive.md, "Numbers".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` and our packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from benchmarks.loadgen import LoadResult, closed_loop, percentile
from benchmarks.local_cluster import REPO, Cluster, free_port, local_cluster
from cli.deploy import local


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


TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def hop_pids(cluster: Cluster, jupyter: str) -> dict[str, int]:
    """The master's, the task's harness's (its gate's) and Jupyter's process ids."""
    deployment = local.read_state(cluster.data_dir)
    assert deployment is not None
    pids = {"master": deployment.by_role("master")[0].pid}
    port = jupyter.rsplit(":", 1)[1]
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"jupyterlab" in argv and f"--port={port}".encode() in argv:
            pids["jupyter"] = int(entry.name)
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            pids["gate"] = int(stat[1])  # its parent, harness.interactive, runs the gate
    return pids


@dataclass
class Row:
    result: LoadResult
    cpu_ms: dict[str, float]  # CPU milliseconds per request, by process

    @property
    def cpu_total(self) -> float:
        return sum(self.cpu_ms.values())


async def measured(
    base: str, path: str, clients: int, seconds: float, headers: dict, pids: dict[str, int]
) -> Row:
    before = {name: cpu_s(pid) for name, pid in pids.items()}
    client_before = time.process_time()
    result = await load(base, path, clients, seconds, headers)
    done = max(result.acked, 1)
    cpu = {"client": (time.process_time() - client_before) * 1000 / done}
    cpu.update({name: (cpu_s(pid) - before[name]) * 1000 / done for name, pid in pids.items()})
    return Row(result, cpu)


def splice(target: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("splice.py")), str(port), target]
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return proc, f"http://127.0.0.1:{port}"
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("the splice did not start")


HOPS = ("client", "master", "splice", "gate", "jupyter")


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
            jupyter = await jupyter_address(cluster, task_id)
            address, secret = gate_address(cluster.data_dir, task_id)
            key = {"X-Resolute-Proxy-Secret": secret}
            auth = {"Authorization": cluster.http.headers["authorization"]}
            pids = hop_pids(cluster, jupyter)
            spliced, splice_url = splice(address)
            pids["splice"] = spliced.pid
            paths = {
                "direct": (f"http://{jupyter}", {}),
                "gate": (f"http://{address}", key),
                "splice": (splice_url, key),
                "proxy": (cluster.url, auth),
            }
            path = f"/proxy/{task_id}/api/status"
            results: dict[tuple[str, int], Row] = {}
            try:
                for clients in (1, args.clients):
                    for base, headers in paths.values():  # warm all up
                        await load(base, path, clients, 1.0, headers)
                    for name, (base, headers) in paths.items():
                        row = await measured(base, path, clients, seconds, headers, pids)
                        results[name, clients] = row
            finally:
                spliced.kill()
                spliced.wait()
            await cluster.post(f"/api/v1/notebooks/{task_id}/kill")
    report(times, results, seconds, args.clients)
    return 0


def report(
    times: list[float], results: dict[tuple[str, int], Row], seconds: float, many: int
) -> None:
    print("\n`det notebook start` -> JupyterLab answering through the proxy (process runtime)")
    print(f"  runs: {', '.join(f'{t:.2f}s' for t in times)}; best {min(times):.2f}s, "
          f"median {sorted(times)[len(times) // 2]:.2f}s")  # fmt: skip
    print(f"\nGET /proxy/{{id}}/api/status ({seconds:g}s per row; load average "
          f"{os.getloadavg()[0]:.1f}): direct to Jupyter, through the task's gate, through a "
          "zero-work splice and the gate, through the master's proxy and the gate")  # fmt: skip
    print(f"  {'':<7} {'':>7} {'':>7} {'':>7} {'':>7} | CPU ms per request, by process")
    print(f"  {'path':<7} {'clients':>7} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} | "
          f"{' '.join(f'{h:>7}' for h in HOPS)} {'total':>7}")  # fmt: skip
    for (name, clients), row in results.items():
        r = row.result
        cpu = " ".join(f"{row.cpu_ms[h]:>7.3f}" if h in row.cpu_ms else f"{'-':>7}" for h in HOPS)
        print(f"  {name:<7} {clients:>7} {r.requests_per_s:>7.0f} "
              f"{percentile(r.latencies_ms, 50):>7.2f} {percentile(r.latencies_ms, 99):>7.2f}"
              f" | {cpu} {row.cpu_total:>7.3f}")  # fmt: skip
    one_d, one_p = results["direct", 1].result, results["proxy", 1].result
    added = percentile(one_p.latencies_ms, 50) - percentile(one_d.latencies_ms, 50)
    direct, proxied, floor = (results[n, many] for n in ("direct", "proxy", "splice"))

    def share(a: Row, b: Row) -> tuple[float, float]:
        # Measured throughput, and the share the CPU each request costs leaves (what a
        # CPU-bound machine would measure, whatever else it runs).
        rps = b.result.requests_per_s / a.result.requests_per_s if a.result.requests_per_s else 0
        return rps, a.cpu_total / b.cpu_total if b.cpu_total else 0.0

    rps, by_cpu = share(direct, proxied)
    floor_rps, floor_cpu = share(direct, floor)
    print(f"\n  added p50 latency (1 client): {added:.2f} ms "
          f"(target <= 2 ms: {'met' if added <= 2 else 'MISSED'})")  # fmt: skip
    print(f"  proxied throughput ({many} clients): {rps:.0%} of direct "
          f"(target >= 80 %: {'met' if rps >= 0.8 else 'MISSED'}); by CPU per request "
          f"{by_cpu:.0%}")  # fmt: skip
    print(f"  the floor, a zero-work splice in the master's place: {floor_rps:.0%} of direct; "
          f"by CPU per request {floor_cpu:.0%}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
