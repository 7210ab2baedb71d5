"""The lifecycle benchmark: its requests, verdicts and tables; the Slurm peer really runs jobs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks import task_throughput
from benchmarks.first_step import EXAMPLE, FirstStep, Interpreter, experiment_body
from benchmarks.lifecycle import LifecycleResult
from benchmarks.local_cluster import free_port
from benchmarks.report import Results, _tables
from benchmarks.task_throughput import SLURM_SETUP, Throughput, command_body, slurm_installed

MOUNTS = [{"host_path": "/opt/py", "container_path": "/opt/py", "read_only": True}]


def test_experiment_body_is_the_hello_example_with_the_docker_image_when_asked() -> None:
    plain = experiment_body(None)
    config = json.loads(plain["config"])
    assert config["entrypoint"] and config["name"] == "bench-first-step"
    assert "image" not in config.get("environment", {})
    names = {f["path"] for f in plain["modelDefinition"]}
    assert "train.py" in names and plain["activate"] is True

    docker = json.loads(experiment_body(("img:1", MOUNTS))["config"])
    assert docker["environment"]["image"] == "img:1"
    assert docker["bind_mounts"][-1] == MOUNTS[0]
    assert (EXAMPLE / "const.yaml").exists()


def test_command_body_runs_true_on_one_slot() -> None:
    assert command_body(None) == {
        "config": {"description": "bench-true", "entrypoint": ["true"], "resources": {"slots": 1}},
        "files": [],
    }
    docker = command_body(("img:1", MOUNTS))["config"]
    assert docker["environment"] == {"image": "img:1"} and docker["bind_mounts"] == MOUNTS


def lifecycle(process_s: list[float], ours_total: float) -> LifecycleResult:
    return LifecycleResult(
        interpreters=[Interpreter('python -c "import torch"', [2.0, 2.2, 2.4])],
        first_steps=[
            FirstStep(
                "process",
                samples_s=process_s,
                running_s=[0.3],
                target_s=3.7,
                target_note="1.5 s + import torch",
                floor_s=3.0,
            ),
            FirstStep("docker", available=False, note="no Docker engine"),
        ],
        throughput=[
            Throughput("Resolute (process runtime)", 500, 8, total_s=ours_total),
            Throughput("Slurm 22.05.8", 500, 8, total_s=100.0),
        ],
    )


def test_verdicts_compare_with_slurm_and_the_first_step_target() -> None:
    good = lifecycle([3.0, 3.5, 3.6], ours_total=25.0)  # 20 tasks/s vs 5: 4x
    assert good.misses() == []
    assert good.ratio(good.throughput[0]) == pytest.approx(4.0)

    bad = lifecycle([3.0, 4.0, 4.5], ours_total=50.0)  # 10 vs 5 tasks/s: 2x
    assert bad.misses() == [
        "first step, process runtime: median 4.00 s (target ≤ 3.70 s = 1.5 s + import torch)",
        "task throughput, Resolute (process runtime): 2.0x Slurm (target ≥ 3x)",
    ]
    bad.throughput[1].available = False  # no peer: nothing to compare, no verdict
    assert bad.ratio(bad.throughput[0]) is None


def test_tables_show_each_runtime_the_interpreters_and_both_systems() -> None:
    res = Results(settings={}, lifecycle=lifecycle([3.0, 3.5, 3.6], ours_total=25.0))
    (first, first_header, first_rows, _), (tp, _, tp_rows, _) = _tables(res)
    assert "first training step" in first and "median s" in first_header
    assert first_rows[0][:2] == ["process runtime", "3.50"] and "met" in first_rows[0][5]
    assert first_rows[0][4] == "0.50"  # beyond the same script off a cluster
    assert first_rows[1][:2] == ["docker runtime", "unavailable"]
    assert first_rows[2][0] == 'python -c "import torch"'
    assert "throughput" in tp.lower()
    assert [r[:2] for r in tp_rows] == [
        ["Resolute (process runtime)", "20.0"],
        ["Slurm 22.05.8", "5.0"],
    ]
    assert tp_rows[0][5] == "4.0x: met"
    assert res.as_json()["lifecycle"]["throughput"][0]["vs_slurm"] == pytest.approx(4.0)


def test_resolute_rows_compare_with_slurm_and_the_docker_row_with_the_engine_too() -> None:
    """The engine row sits between Resolute's rows and Slurm's: it is no one's Slurm (the
    process runtime's 10.8 tasks/s against Slurm's 2.9 printed "0.8x: MISSED", divided by the
    engine's 14.4)."""
    res = LifecycleResult(
        throughput=[
            Throughput("Resolute (process runtime)", 500, 8, total_s=500 / 10.8),
            Throughput("Resolute (docker runtime)", 500, 8, total_s=500 / 6.9),
            Throughput("Docker engine alone (SDK, no Resolute)", 500, 8, total_s=500 / 14.4),
            Throughput("Slurm 22.05.8", 500, 8, total_s=500 / 2.9),
        ]
    )
    process, docker, engine, slurm = res.throughput
    assert res.ratio(process) == pytest.approx(10.8 / 2.9)
    assert res.ratio(docker) == pytest.approx(6.9 / 2.9)
    assert res.ratio(engine) is None and res.ratio(slurm) is None
    assert res.engine_ratio(docker) == pytest.approx(6.9 / 14.4)
    assert res.engine_ratio(process) is None and res.engine_ratio(engine) is None
    assert res.misses() == [
        "task throughput, Resolute (docker runtime): 2.4x Slurm (target ≥ 3x)",
        "task throughput, Resolute (docker runtime): 48% of the Docker engine alone (target ≥ 80%)",
    ]
    (_, header, rows, _) = res.tables()[0]
    assert header[5:7] == ["vs Slurm (≥ 3x)", "of engine (≥ 80%)"]
    assert [r[5:7] for r in rows] == [
        ["3.7x: met", "—"],
        ["2.4x: MISSED", "48%: MISSED"],
        ["—", "—"],
        ["—", "—"],
    ]
    engine.available = False
    assert res.engine_ratio(docker) is None


@pytest.mark.slow
@pytest.mark.skipif(not slurm_installed(), reason="slurm-wlm and munge are not installed")
def test_the_slurm_peer_has_eight_slots(tmp_path: Path) -> None:
    """The peer really is an 8-slot Slurm: 16 one-second jobs, at most 8 running at once."""
    # Not under tmp_path: slurmstepd's socket paths under it pass 107 bytes once pytest's
    # numbered base directory has three digits (the setup script refuses such a directory).
    with tempfile.TemporaryDirectory(prefix="slurm-") as short:
        run_slurm_peer(Path(short) / "state", tmp_path)


def run_slurm_peer(state: Path, tmp_path: Path) -> None:
    # Ports of its own, so that a benchmark's Slurm on the default ports is left alone.
    ports = {"RESOLUTE_SLURMCTLD_PORT": str(free_port()), "RESOLUTE_SLURMD_PORT": str(free_port())}
    env = {**os.environ, **ports, "SLURM_CONF": str(state / "slurm.conf")}
    started = subprocess.run(["bash", str(SLURM_SETUP), "start", str(state), "8"],
                             capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    try:
        assert started.returncode == 0, started.stderr
        for _ in range(16):
            subprocess.run(["sbatch", "-Q", "-o", "/dev/null", "--wrap", "sleep 1"],
                           check=True, env=env, cwd=tmp_path, timeout=30)  # fmt: skip
        peak, deadline = 0, time.monotonic() + 120
        while time.monotonic() < deadline:
            out = subprocess.run(["squeue", "-h", "-o", "%T"], capture_output=True, text=True,
                                 env=env, timeout=30).stdout.split()  # fmt: skip
            peak = max(peak, out.count("RUNNING"))
            if not out:
                break
            time.sleep(0.1)
        assert not out, "the jobs did not finish"
        assert peak == 8
    finally:
        subprocess.run(["bash", str(SLURM_SETUP), "stop", str(state)], env=env, timeout=120)


def test_the_slurm_setup_refuses_a_state_dir_its_job_sockets_would_not_fit_in(
    tmp_path: Path,
) -> None:
    """A STATE_DIR of 72 characters leaves room in slurmstepd's 107-byte socket paths for job
    ids of 7 digits; a longer one is refused before anything starts, saying why."""
    too_long = tmp_path / ("d" * max(1, 73 - len(str(tmp_path)) - 1))
    assert len(str(too_long)) >= 73
    refused = subprocess.run(["bash", str(SLURM_SETUP), "start", str(too_long), "8"],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    if refused.returncode == 0:  # it started one after all: leave nothing running
        subprocess.run(["bash", str(SLURM_SETUP), "stop", str(too_long)], timeout=120)
    assert refused.returncode == 2
    assert "STATE_DIR is too long for Slurm" in refused.stderr
    assert not (too_long / "slurm.conf").exists()  # refused before anything was written


def test_the_engine_row_is_the_mean_of_a_run_before_and_one_after_ours() -> None:
    before = Throughput("Docker engine alone", 100, 8, total_s=10.0, failed=1, note="n")
    after = Throughput("Docker engine alone", 100, 8, total_s=30.0)
    row = task_throughput.bracketed(before, after)
    assert (row.total_s, row.per_s, row.failed) == (20.0, 5.0, 1)
    assert "10.0/s" in row.note and "3.3/s" in row.note
    missing = Throughput("Docker engine alone", 100, 8, available=False, note="no engine")
    assert task_throughput.bracketed(before, missing) is missing
    assert task_throughput.bracketed(missing, after) is missing


def test_the_engine_is_asked_for_what_our_runtime_asks_with_true_as_the_command(
    tmp_path: Path,
) -> None:
    """The engine row's create request is our runtime's (same builder), running `true` itself:
    the run dir read-write and the harness library read-only besides the image's mounts, our
    labels, as many variables as a `det cmd run true` container gets (21), init, host network,
    the local log driver, and the task user when the benchmark runs as root."""
    from agent.runtimes.docker import create_options

    run_dir, pylib = tmp_path / "run", tmp_path / "pylib"
    request = task_throughput.engine_request("img", MOUNTS, run_dir, pylib, 3)
    options = create_options(request, run_dir)
    assert options["entrypoint"] == ["true"] and options["command"] == []
    mounts = [(m["Target"], m["Source"], m["ReadOnly"]) for m in options["mounts"]]
    assert mounts == [
        ("/run/determined", str(run_dir), False),
        ("/run/determined/pylib", str(pylib), True),
        ("/opt/py", "/opt/py", True),
    ]
    assert (options["init"], options["network_mode"]) == (True, "host")
    assert options["log_config"]["Type"] == "local"
    as_root = os.geteuid() == 0
    assert (
        len(options["environment"])
        == task_throughput.ENGINE_ENV_VARS + 3 + as_root
        == (21 if as_root else 20)
    )
    assert options.get("user") == ("70001:70001" if as_root else None)
    labels = options["labels"]
    assert labels["ai.determined.container.agent"] == task_throughput.ENGINE_AGENT
    assert labels["ai.determined.container.allocation"] == "bench-engine-3.1"


def test_the_cpu_meter_counts_named_processes_agents_together_and_the_machine() -> None:
    me = os.getpid()
    meter = task_throughput.CpuMeter({"master": me, "local-agent-0": me, "local-agent-1": me})
    meter.start()
    spent = time.process_time()
    while time.process_time() - spent < 0.05:  # CPU work for the meter to see
        pass
    cpu = meter.per_task_ms(2)
    assert list(cpu)[:2] == ["master", "agents"]
    assert cpu["master"] > 0 and cpu["agents"] == pytest.approx(2 * cpu["master"])
    assert cpu["client"] > 0 and cpu["machine"] > 0
    row = Throughput("Resolute (docker runtime)", 2, 8, total_s=1.0, cpu_ms=cpu)
    assert row.cpu_note().startswith("Resolute (docker runtime): CPU ms per task: master ")


def test_the_bracketed_engine_row_averages_its_cpu_per_task() -> None:
    before = Throughput("Docker engine alone", 100, 8, total_s=10.0, cpu_ms={"dockerd": 20.0})
    after = Throughput("Docker engine alone", 100, 8, total_s=30.0, cpu_ms={"dockerd": 30.0})
    assert task_throughput.bracketed(before, after).cpu_ms == {"dockerd": 25.0}


class _RecordedEnds:
    """A cluster whose commands end, as the master records them, at given offsets from the
    first submit; the poll only sees them some time after."""

    def __init__(self, ends_after_s: list[float]) -> None:
        self.ends_after_s = ends_after_s
        self.t0: float | None = None
        self.ids: list[str] = []

    async def post(self, path: str, body: Any = None) -> Any:
        self.t0 = time.time() if self.t0 is None else self.t0
        self.ids.append(f"cmd-{len(self.ids)}")
        return {"command": {"id": self.ids[-1]}}

    def _command(self, n: int) -> dict[str, Any]:
        assert self.t0 is not None
        end = self.t0 + self.ends_after_s[n]
        if time.time() < end:
            return {"id": self.ids[n], "state": "STATE_RUNNING", "exitCode": None}
        return {
            "id": self.ids[n],
            "state": "STATE_TERMINATED",
            "exitCode": 0,
            "endTime": datetime.fromtimestamp(end, UTC).isoformat().replace("+00:00", "Z"),
        }

    async def get(self, path: str, **params: Any) -> Any:
        if path == "/api/v1/commands":
            return {"commands": [self._command(n) for n in range(len(self.ids))]}
        return {"command": self._command(self.ids.index(path.rsplit("/", 1)[1]))}


def test_our_total_ends_at_the_last_end_the_master_recorded_not_at_the_poll() -> None:
    cluster = _RecordedEnds([0.2, 0.9, 0.4])  # the last submitted is not the last to end
    submitted, total, failed, lag = asyncio.run(
        task_throughput._submit_and_wait(cluster, {}, 3, timeout_s=10)  # type: ignore[arg-type]
    )
    assert failed == 0 and submitted < 0.5
    assert total == pytest.approx(0.9, abs=0.01)
    assert 0 <= lag <= task_throughput.POLL_S + 0.1


def _rate(system: str, per_s: float | None) -> Throughput:
    if per_s is None:
        return Throughput(system, 100, 8, available=False, note="failed")
    return Throughput(system, 100, 8, total_s=100 / per_s)


@pytest.mark.parametrize(
    ("ours", "engines", "pick", "shares"),
    [
        # One pair: the row is that run, against the mean time of the engine around it.
        ([8.0], [10.0, 10.0], 0, [0.80]),
        # Three pairs: the middle share, whatever order the runs came in.
        ([9.0, 8.0, 8.5], [10.0, 10.0, 10.0, 10.0], 2, [0.90, 0.80, 0.85]),
        # A run of ours is judged by its own neighbours, not by the others' engine runs.
        ([8.0, 8.0, 8.0], [10.0, 10.0, 8.0, 8.0], 1, [0.80, 0.90, 1.0]),  # mean time, not rate
        # An even count takes the lower middle: the worse of the two middle runs.
        ([9.0, 8.0], [10.0, 10.0, 10.0], 1, [0.90, 0.80]),
        ([9.0, 8.0, 8.2, 8.6], [10.0] * 5, 2, [0.90, 0.80, 0.82, 0.86]),
        # A failed run of ours counts as the worst.
        ([None, 9.0, 8.0], [10.0] * 4, 2, [0.0, 0.90, 0.80]),
    ],
)
def test_several_pairs_give_the_run_with_the_median_share_of_its_bracketing_engine_runs(
    ours: list[float | None], engines: list[float], pick: int, shares: list[float]
) -> None:
    got_pick, got_shares = task_throughput.median_pair(
        [_rate("Resolute (docker runtime)", r) for r in ours],
        [_rate("Docker engine alone", r) for r in engines],
    )
    assert got_pick == pick
    assert got_shares == pytest.approx(shares, abs=1e-4)


def test_pairs_need_one_engine_run_more_than_ours() -> None:
    with pytest.raises(ValueError, match="need 3 engine runs"):
        task_throughput.median_pair([_rate("ours", 8.0)] * 2, [_rate("engine", 10.0)] * 2)
