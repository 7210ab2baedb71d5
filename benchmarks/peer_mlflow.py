"""Benchmark 1b (peer): the MLflow tracking server on the same PostgreSQL, same load shape.

MLflow is installed into a throwaway venv (benchmarks/.peer-venv, git-ignored) with pip from the
configured index. 16 clients call POST /api/2.0/mlflow/runs/log-batch with 1,000 metrics per call
(MLflow's per-call limit) into 16 runs; the rate counts rows in MLflow's `metrics` table (one row
per value) sent during the timed window.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from benchmarks import loadgen, pg, servers
from benchmarks.ingest import IngestResult
from benchmarks.payloads import MlflowBatches

PEER_VENV = Path(__file__).resolve().parent / ".peer-venv"
PACKAGES = ["mlflow", "psycopg2-binary"]


class Unavailable(Exception):
    """MLflow cannot be run here; the message says why."""


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _installed_version(venv: Path) -> str | None:
    python = _venv_python(venv)
    if not python.exists():
        return None
    probe = subprocess.run(
        [str(python), "-c", "import mlflow, psycopg2; print(mlflow.__version__)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return probe.stdout.strip() if probe.returncode == 0 else None


def ensure_mlflow(venv: Path = PEER_VENV, *, say=print) -> str:  # type: ignore[no-untyped-def]
    """MLflow's version, installing it into `venv` first when needed."""
    version = _installed_version(venv)
    if version:
        return version
    say(f"installing {' '.join(PACKAGES)} into {venv} (once; about a minute) …")
    try:
        if not _venv_python(venv).exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        pip = subprocess.run(
            [str(_venv_python(venv)), "-m", "pip", "install", "--quiet", *PACKAGES],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise Unavailable(f"could not create the peer venv: {exc}") from exc
    if pip.returncode != 0:
        errors = [line for line in pip.stderr.splitlines() if "ERROR" in line] or [
            pip.stderr.strip().splitlines()[-1] if pip.stderr.strip() else "pip failed"
        ]
        raise Unavailable(f"pip install {' '.join(PACKAGES)} failed: {errors[-1][:300]}")
    version = _installed_version(venv)
    if not version:
        raise Unavailable("mlflow installed but cannot be imported")
    return version


def _init_schema(venv: Path, uri: str, artifacts: Path) -> None:
    """Create MLflow's tables once, before its workers start (they would race to migrate)."""
    code = (
        "import sys\n"
        "from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore\n"
        "SqlAlchemyStore(sys.argv[1], sys.argv[2])\n"
    )
    done = subprocess.run(
        [str(_venv_python(venv)), "-c", code, uri, artifacts.as_uri()],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise Unavailable(f"MLflow could not create its schema: {done.stderr.strip()[-500:]}")


def mlflow_server(venv: Path, uri: str, workdir: Path, workers: int | None) -> servers.Server:
    port = servers.free_port()
    argv = [str(venv / "bin" / "mlflow"), "server", "--backend-store-uri", uri]
    argv += ["--default-artifact-root", (workdir / "artifacts").as_uri()]
    argv += ["--host", "127.0.0.1", "--port", str(port)]
    if workers:
        argv += ["--workers", str(workers)]
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return servers.Server(
        name="mlflow server",
        argv=argv,
        env=env,
        log_path=workdir / "mlflow.log",
        ready_url=f"http://127.0.0.1:{port}/health",
    )


async def _count_metric_rows(database: str, since: dict[str, int]) -> int:
    """Rows in MLflow's `metrics` table; since = {run id: first step of the timed window}."""
    async with pg.connect(database) as conn:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM metrics AS m"
                " JOIN unnest($1::text[], $2::bigint[]) AS w(run_uuid, min_step)"
                " ON m.run_uuid = w.run_uuid AND m.step >= w.min_step",
                list(since),
                list(since.values()),
            )
        )


async def run(
    database: str,
    workdir: Path,
    *,
    clients: int,
    duration_s: float,
    warmup_s: float,
    workers: int | None = None,
    say=print,  # type: ignore[no-untyped-def]
) -> IngestResult:
    result = IngestResult(system="MLflow (REST → PostgreSQL)")
    try:
        version = ensure_mlflow(say=say)
    except Unavailable as exc:
        result.available = False
        result.note = str(exc)
        return result
    # SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3, so name psycopg2 explicitly.
    uri = pg.dsn(database).replace("postgresql://", "postgresql+psycopg2://", 1)
    workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    _init_schema(PEER_VENV, uri, workdir / "artifacts")
    t1 = time.perf_counter()
    server = mlflow_server(PEER_VENV, uri, workdir, workers)
    server.start()
    try:
        await server.wait_ready()
        say(
            f"  mlflow {version}: schema in {t1 - t0:.1f}s, "
            f"server ready in {time.perf_counter() - t1:.1f}s"
        )
        url = servers.base_url(server)
        api = "/api/2.0/mlflow"
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            r = await http.post(f"{api}/experiments/create", json={"name": "bench-ingest"})
            r.raise_for_status()
            experiment_id = r.json()["experiment_id"]
            run_ids = []
            for i in range(clients):
                r = await http.post(
                    f"{api}/runs/create",
                    json={
                        "experiment_id": experiment_id,
                        "run_name": f"trial-{i}",
                        "start_time": int(time.time() * 1000),
                    },
                )
                r.raise_for_status()
                run_ids.append(r.json()["run"]["info"]["run_id"])
        batches = [MlflowBatches(run_id, seed=i) for i, run_id in enumerate(run_ids)]
        next_seq = [0] * clients

        async def send(http: httpx.AsyncClient, client: int, _seq: int) -> httpx.Response:
            next_seq[client] += 1
            body = batches[client].body(next_seq[client], int(time.time() * 1000))
            return await http.post(
                f"{api}/runs/log-batch",
                content=body,
                headers={"Content-Type": "application/json"},
            )

        if warmup_s > 0:
            await loadgen.closed_loop(url, clients, warmup_s, send)
        # Count only values sent in the timed window: their steps start past warm-up's.
        since = {r: next_seq[c] * MlflowBatches.STEPS for c, r in enumerate(run_ids)}
        load = await loadgen.closed_loop(url, clients, duration_s, send)
        stored = await _count_metric_rows(database, since)
        result.record(load, stored, stored)
        shown = f"{workers} workers" if workers else "4 workers (default)"
        result.note = f"mlflow {version}, {shown}"
    finally:
        server.stop()
    return result
