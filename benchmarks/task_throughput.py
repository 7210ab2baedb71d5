"""Trivial task throughput: 500 `true` commands on 4 agents x 2 slots, and Slurm on 8 slots.

Resolute: `det deploy local` with 4 agents of 2 artificial slots; one client POSTs
/api/v1/commands with `entrypoint: ["true"]` (what `det cmd run true` sends, minus the CLI's
own start-up) back to back, and polls every 0.5 s (the last command submitted until it has
ended, then GET /api/v1/commands) until every command is TERMINATED. Slurm:
benchmarks/slurm/setup.sh's one-node cluster with 8 slots; 500 `sbatch --wrap true` back to
back, polling `squeue` every 0.5 s until it lists none of them. tasks/s = tasks / (first
submit → the end of the last task), after 8 untimed warm-up tasks: for Resolute the last
`endTime` the master recorded, as for the Docker engine alone the return of its last `wait`;
for Slurm (no accounting database here, so no end times) the poll that finds all done.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.local_cluster import REPO, Cluster, docker_test_image, local_cluster

TARGET_RATIO = 3.0
# The docker runtime's share of what the engine alone does with the same containers.
ENGINE_TARGET = 0.8
ENGINE_AGENT = "bench-engine"  # no agent of ours has this id, so none adopts its containers
# A `det cmd run true` container gets 21 variables from us: 17 from the agent's request, plus
# the 4 the runtime adds (DET_RUN_DIR, DET_WORKDIR, PYTHONPATH, HOME).
ENGINE_ENV_VARS = 17
POLL_S = 0.5  # both systems: each poll lists every task, which costs the server CPU
SLURM_SETUP = REPO / "benchmarks" / "slurm" / "setup.sh"


@dataclass
class Throughput:
    system: str
    tasks: int
    slots: int
    available: bool = True
    note: str = ""
    submit_s: float = 0.0
    total_s: float = 0.0
    failed: int = 0
    # CPU milliseconds per task during the timed batch, by process (CpuMeter); empty: unmeasured.
    cpu_ms: dict[str, float] = field(default_factory=dict)

    def cpu_note(self) -> str:
        if not self.cpu_ms:
            return ""
        parts = ", ".join(f"{k} {v:.0f}" for k, v in self.cpu_ms.items())
        return f"{self.system}: CPU ms per task: {parts}"

    @property
    def per_s(self) -> float | None:
        if not self.available or not self.total_s:
            return None
        return self.tasks / self.total_s


# --- CPU per task ------------------------------------------------------------------------------

DOCKER_CGROUP_USAGE = Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage")  # cgroup v1, cgroupfs


def _process_cpu_s(pid: int) -> float | None:
    """User + system CPU of a process and its reaped children, in seconds; None once gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _busy_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (/proc/stat, all cores)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def _docker_pids() -> dict[str, int]:
    found = {}
    for stat in Path("/proc").glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            name = stat.read_text().strip()
            if name in ("dockerd", "containerd"):
                found[name] = int(stat.parent.name)
    return found


class CpuMeter:
    """CPU per task of each process that does a task's work, across one timed batch: ours (by
    pid), dockerd and containerd, the containers themselves (the docker cgroup, which keeps the
    CPU of removed containers), this benchmark process (the client), and the whole machine.

    What the machine spent beyond the named ones is the per-container processes no parent
    accounts for (containerd-shim, runc), the kernel, and anything else running then (on a
    shared machine, other work: read it with the load average)."""

    def __init__(self, pids: dict[str, int] | None = None) -> None:
        self.pids = {**_docker_pids(), **(pids or {})}
        self._start: dict[str, float] = {}

    def _read(self) -> dict[str, float]:
        out = {}
        for name, pid in self.pids.items():
            value = _process_cpu_s(pid)
            if value is not None:
                out[name] = value
        with contextlib.suppress(OSError, ValueError):
            out["containers"] = int(DOCKER_CGROUP_USAGE.read_text()) / 1e9
        times = os.times()
        out["client"] = times.user + times.system
        out["machine"] = _busy_s()
        return out

    def start(self) -> None:
        self._start = self._read()

    def per_task_ms(self, tasks: int) -> dict[str, float]:
        end = self._read()
        diffs = {k: (end[k] - v) * 1000 / tasks for k, v in self._start.items() if k in end}
        agents = [k for k in diffs if k.startswith("local-agent")]
        if agents:
            diffs["agents"] = sum(diffs.pop(k) for k in agents)
        order = ("master", "agents", "containers", "dockerd", "containerd", "client", "machine")
        return {k: diffs[k] for k in order if k in diffs}


# --- Resolute ----------------------------------------------------------------------------------


def command_body(image: tuple[str, list[dict[str, Any]]] | None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "description": "bench-true",
        "entrypoint": ["true"],
        "resources": {"slots": 1},
    }
    if image is not None:
        config["environment"] = {"image": image[0]}
        config["bind_mounts"] = image[1]
    return {"config": config, "files": []}


async def _all_commands(cluster: Cluster) -> list[dict[str, Any]]:
    return (await cluster.get("/api/v1/commands", limit=100_000))["commands"]


async def _ended(cluster: Cluster, command_id: str) -> bool:
    command = (await cluster.get(f"/api/v1/commands/{command_id}"))["command"]
    return command["state"] == "STATE_TERMINATED"


async def _submit_and_wait(
    cluster: Cluster,
    body: dict[str, Any],
    n: int,
    timeout_s: float,
    meter: CpuMeter | None = None,
) -> tuple[float, float, int, float]:
    """(submit seconds, total seconds, failed, poll lag seconds) for n commands, from the first
    POST to the end of the last one as the master recorded it (its `endTime`, on this machine's
    clock): the engine's row stops when its last `wait` returns, not at the next tick of a poll.
    The lag is how much later the 0.5 s poll saw it.

    Until the last command submitted has ended, each poll asks for that one command only; then
    for the whole list, every poll, until all have ended. Listing every command each 0.5 s
    costs the master CPU that grows with the batch (a share of a 2-CPU machine the engine's
    row never pays), and the last command starts last, so the end is seen just as soon.
    """
    if meter is not None:
        meter.start()
    wall0, t0 = time.time(), time.perf_counter()
    ids = []
    for _ in range(n):
        ids.append((await cluster.post("/api/v1/commands", body))["command"]["id"])
    submitted = time.perf_counter() - t0
    while not await _ended(cluster, ids[-1]):
        if time.perf_counter() - t0 > timeout_s:
            raise RuntimeError(f"the last of {n} commands did not end within {timeout_s:g} s")
        await asyncio.sleep(POLL_S)
    while True:
        wanted = set(ids)
        mine = [c for c in await _all_commands(cluster) if c["id"] in wanted]
        done = [c for c in mine if c["state"] == "STATE_TERMINATED"]
        if len(done) == n:
            seen = time.perf_counter() - t0
            total = max(_end_time(c) for c in done) - wall0
            failed = sum(1 for c in done if c.get("exitCode") not in (0, None) or _failed(c))
            return submitted, total, failed, seen - total
        if time.perf_counter() - t0 > timeout_s:
            raise RuntimeError(f"only {len(done)} of {n} commands ended within {timeout_s:g} s")
        await asyncio.sleep(POLL_S)


def _end_time(command: dict[str, Any]) -> float:
    """A command's `endTime` (ISO 8601, "Z" for UTC) as seconds since the epoch."""
    return datetime.fromisoformat(command["endTime"].replace("Z", "+00:00")).timestamp()


def _deployment_pids(cluster: Cluster) -> dict[str, int]:
    """The master's and the agents' pids, by name ("master", "local-agent-0", ...)."""
    from cli.deploy import local

    state = local.read_state(cluster.data_dir)
    return {p.name: p.pid for p in state.processes} if state is not None else {}


def _failed(command: dict[str, Any]) -> bool:
    status = (command.get("exitStatus") or "").lower()
    return bool(status) and "success" not in status and "exited 0" not in status


async def resolute(
    workdir: Path,
    *,
    runtime: str,
    tasks: int,
    agents: int,
    slots: int,
    say: Callable[[str], None],
    timeout_s: float,
) -> Throughput:
    result = Throughput(f"Resolute ({runtime} runtime)", tasks, agents * slots)
    image = None
    if runtime == "docker":
        found = docker_test_image()
        if isinstance(found, str):
            result.available, result.note = False, found
            return result
        image = found
    body = command_body(image)
    async with local_cluster(workdir, agents=agents, slots=slots, runtime=runtime) as cluster:
        await _submit_and_wait(cluster, body, agents * slots, timeout_s)  # warm-up
        say(f"  Resolute ({runtime}): {tasks} commands on {agents} agents × {slots} slots …")
        meter = CpuMeter(_deployment_pids(cluster))
        result.submit_s, result.total_s, result.failed, lag = await _submit_and_wait(
            cluster, body, tasks, timeout_s, meter
        )
        result.cpu_ms = meter.per_task_ms(tasks)
    result.note = (
        f"{agents} agents × {slots} artificial slots; submitting took {result.submit_s:.1f} s; "
        f"the 0.5 s poll saw the last end {lag:.2f} s after the master recorded it"
    )
    return result


# --- the Docker engine alone ------------------------------------------------------------------


def engine_request(
    image: str, mounts: list[dict[str, Any]], run_dir: Path, pylib: Path, n: int
) -> Any:
    """What our docker runtime asks of the engine for one `det cmd run true` (a command without
    a context directory runs `true` itself, no launcher around it): the same image, bind mounts
    (run dir read-write, harness library read-only, the image's mounts), labels, environment
    (as many DET_* variables), user (an unlinked user's uid on an agent running as root), init,
    host network and log driver. Built by the runtime's own `create_options`, so the two cannot
    drift apart."""
    from agent.container_labels import ALLOCATION_LABEL, TASK_LABEL, user_labels
    from agent.protocol import Mount, TaskUser
    from agent.runtimes.base import RunRequest

    allocation = f"bench-engine-{n}.1"
    env = {f"DET_BENCH_{i}": "x" * 36 for i in range(ENGINE_ENV_VARS)}
    user = TaskUser(uid=70001, gid=70001, owner="admin") if os.geteuid() == 0 else None
    return RunRequest(
        container_id=f"{allocation}-0",
        agent_id=ENGINE_AGENT,
        argv=("true",),
        run_dir=run_dir,
        image=image,
        environment=env,
        mounts=tuple(Mount(**m) for m in mounts),
        labels={ALLOCATION_LABEL: allocation, TASK_LABEL: allocation, **user_labels(user)},
        pylib=pylib,
        user=user,
    )


def docker_engine(
    tasks: int, slots: int, say: Callable[[str], None], workdir: Path | None = None
) -> Throughput:
    """The ceiling of any runtime built on dockerd: `slots` threads that each create, start,
    wait for and remove a container running `true`, through the same four API calls our
    runtime makes and with the create request it sends (`engine_request`), no master and no
    agent. Each container gets a run dir of its own, as a task does."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    import docker
    from docker.models.containers import _create_container_args

    from agent.runtimes.docker import create_options

    result = Throughput("Docker engine alone (SDK, no Resolute)", tasks, slots)
    found = docker_test_image()
    if isinstance(found, str):
        result.available, result.note = False, found
        return result
    image, mounts = found
    client = docker.from_env(max_pool_size=slots * 2)
    api = client.api
    root = Path(tempfile.mkdtemp(prefix="engine-", dir=workdir))
    pylib = root / "pylib"
    pylib.mkdir()

    def one(n: int) -> int:
        run_dir = root / f"run-{n}"
        (run_dir / "workdir").mkdir(parents=True)
        options = create_options(engine_request(image, mounts, run_dir, pylib, n), run_dir)
        docker_id = api.create_container(
            **_create_container_args({**options, "version": api._version})
        )["Id"]
        try:
            api.start(docker_id)
            return int(api.wait(docker_id)["StatusCode"])
        finally:
            api.remove_container(docker_id, force=True)

    try:
        with ThreadPoolExecutor(slots) as pool:
            list(pool.map(one, range(-slots, 0)))  # warm-up
            say(f"  Docker engine alone: {tasks} containers, {slots} at a time …")
            meter = CpuMeter()
            meter.start()
            t0 = time.perf_counter()
            codes = list(pool.map(one, range(tasks)))
            result.total_s = time.perf_counter() - t0
            result.cpu_ms = meter.per_task_ms(tasks)
        result.failed = sum(1 for c in codes if c != 0)
        result.note = (
            "create + start + wait + remove per task, with our runtime's create request running "
            "`true`; the ceiling for a docker runtime (ours also follows each container's log)"
        )
    finally:
        client.close()
        shutil.rmtree(root, ignore_errors=True)
    return result


def bracketed(before: Throughput, after: Throughput) -> Throughput:
    """The engine's row from a run before ours and one after: their mean time, both rates shown."""
    if not (before.available and after.available):
        return before if not before.available else after
    return Throughput(
        before.system,
        before.tasks,
        before.slots,
        total_s=(before.total_s + after.total_s) / 2,
        failed=before.failed + after.failed,
        cpu_ms={
            k: (v + after.cpu_ms[k]) / 2 for k, v in before.cpu_ms.items() if k in after.cpu_ms
        },
        note=(
            f"{before.note}; mean of a run before ours ({before.per_s:.1f}/s) and one after "
            f"({after.per_s:.1f}/s)"
        ),
    )


def engine_share(ours: Throughput, engine: Throughput) -> float:
    """Our rate over the engine's; 0 where either row has none (a failed run counts as the
    worst, so it is never the one picked as the median)."""
    if not (ours.per_s and engine.per_s):
        return 0.0
    return ours.per_s / engine.per_s


def median_pair(ours: list[Throughput], engines: list[Throughput]) -> tuple[int, list[float]]:
    """Runs of ours interleaved with the engine's (engine, ours, engine, …, ours, engine: one
    more engine run than ours): the index of the run of ours whose share of its bracketing
    engine runs' mean is the median (the lower middle of an even count: the worse of the two),
    and every run's share in order."""
    if len(engines) != len(ours) + 1 or not ours:
        raise ValueError(f"{len(ours)} runs of ours need {len(ours) + 1} engine runs around them")
    shares = [
        engine_share(run, bracketed(engines[i], engines[i + 1])) for i, run in enumerate(ours)
    ]
    order = sorted(range(len(shares)), key=lambda i: (shares[i], i))
    return order[(len(order) - 1) // 2], shares


# --- Slurm -------------------------------------------------------------------------------------


def _slurm_version(env: dict[str, str]) -> str:
    """`Slurm 22.05.8` (sinfo -V needs the config to answer)."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["sinfo", "-V"], capture_output=True, text=True, env=env, timeout=10)
        words = out.stdout.split()
        if out.returncode == 0 and words:
            return f"Slurm {words[-1]}"
    return "Slurm"


def _squeue_count(env: dict[str, str]) -> int:
    out = subprocess.run(
        ["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=env, timeout=30
    )
    if out.returncode != 0:
        raise RuntimeError(f"squeue failed: {out.stderr.strip()}")
    return len(out.stdout.split())


def _slurm_batch(n: int, env: dict[str, str], cwd: Path, timeout_s: float) -> tuple[float, float]:
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run(
            ["sbatch", "-Q", "-o", "/dev/null", "--wrap", "true"],
            check=True, capture_output=True, env=env, cwd=cwd, timeout=60,
        )  # fmt: skip
    submitted = time.perf_counter() - t0
    while _squeue_count(env):
        if time.perf_counter() - t0 > timeout_s:
            raise RuntimeError(f"slurm did not finish {n} jobs within {timeout_s:g} s")
        time.sleep(POLL_S)
    return submitted, time.perf_counter() - t0


def _slurm_failures(env: dict[str, str]) -> int:
    """Jobs the controller still remembers (MinJobAge) whose state is not COMPLETED."""
    out = subprocess.run(
        ["squeue", "-h", "-t", "all", "-o", "%T"], capture_output=True, text=True, env=env,
        timeout=30,
    )  # fmt: skip
    return sum(1 for s in out.stdout.split() if s != "COMPLETED")


def slurm(workdir: Path, *, tasks: int, slots: int, say: Callable[[str], None], timeout_s: float):
    result = Throughput("Slurm", tasks, slots)
    state = workdir / "slurm"
    started = subprocess.run(
        ["bash", str(SLURM_SETUP), "start", str(state), str(slots)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    try:
        if started.returncode != 0:
            result.available = False
            result.note = f"not available: {started.stderr.strip()[-600:]}"
            return result
        env = {**os.environ, "SLURM_CONF": str(state / "slurm.conf")}
        result.system = _slurm_version(env)
        _slurm_batch(slots, env, state, timeout_s)  # warm-up
        say(f"  {result.system}: {tasks} × sbatch --wrap true on {slots} slots …")
        result.submit_s, result.total_s = _slurm_batch(tasks, env, state, timeout_s)
        result.failed = _slurm_failures(env)
        result.note = (
            f"one node, {slots} CPUs (cons_tres, CR_CPU, OverSubscribe=FORCE:1), default "
            f"scheduler settings; submitting took {result.submit_s:.1f} s"
        )
        return result
    finally:
        subprocess.run(
            ["bash", str(SLURM_SETUP), "stop", str(state)], capture_output=True, timeout=120
        )


def slurm_installed() -> bool:
    return all(shutil.which(b) for b in ("sbatch", "squeue", "slurmctld", "slurmd", "munged"))
