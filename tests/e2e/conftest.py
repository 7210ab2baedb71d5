"""End-to-end fixtures: a real `det deploy local` deployment (master + agents as processes).

Everything is real: the master (`python -m controlplane`, SQLite in the data dir), the agents
(`python -m agent`, artificial slots), the harness in the tasks, and our `det` run as a
subprocess. A failed test shows the tail of every process's log (captured stdout).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli.deploy import local

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = Path(__file__).resolve().parent / "workload"
EXAMPLE = REPO / "examples" / "hello"
DET = str(Path(sys.executable).parent / "det")
TERMINAL = {"STATE_COMPLETED", "STATE_CANCELED", "STATE_ERROR", "STATE_DELETED"}


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Deployment:
    options: local.LocalOptions
    password: str
    token: str
    env: dict[str, str]
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )

    @property
    def url(self) -> str:
        return self.options.master_url

    @property
    def data_dir(self) -> Path:
        return self.options.data_dir

    # --- REST and CLI --------------------------------------------------------------------------

    def get(self, path: str, **params: Any) -> Any:
        r = self.http.get(path, params=params or None)
        assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text[:500]}"
        return r.json()

    def post(self, path: str, body: Any = None) -> Any:
        r = self.http.post(path, json=body)
        assert r.status_code == 200, f"POST {path}: {r.status_code} {r.text[:500]}"
        return r.json() if r.content else None

    def det(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Our `det` CLI as a subprocess, as admin (DET_USER / DET_PASS)."""
        return subprocess.run(
            [DET, "-m", self.url, *args],
            env=self.env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip

    def create_experiment(self, config: dict[str, Any], context: Path, tmp: Path) -> int:
        path = tmp / f"config-{time.monotonic_ns()}.yaml"
        path.write_text(json.dumps(config))  # JSON is YAML
        done = self.det("experiment", "create", str(path), str(context))
        assert done.returncode == 0, done.stdout + done.stderr
        return max(e["id"] for e in self.get("/api/v1/experiments", limit=1000)["experiments"])

    def trial_of(self, experiment_id: int, timeout: float = 30) -> dict[str, Any]:
        def first() -> dict[str, Any] | None:
            trials = self.get(f"/api/v1/experiments/{experiment_id}/trials")["trials"]
            return trials[0] if trials else None

        return wait_for(first, timeout, f"a trial of experiment {experiment_id}")

    def trial(self, trial_id: int) -> dict[str, Any]:
        return self.get(f"/api/v1/trials/{trial_id}")["trial"]

    def trial_logs(self, trial_id: int) -> list[str]:
        r = self.http.get(f"/api/v1/trials/{trial_id}/logs", params={"limit": 100_000})
        assert r.status_code == 200, r.text[:500]
        lines = []
        for raw in r.text.splitlines():
            if raw.strip():
                entry = json.loads(raw)
                entry = entry.get("result", entry)
                lines.append(str(entry.get("message", entry.get("log", ""))).rstrip("\n"))
        return lines

    def training_steps(self, trial_id: int) -> list[int]:
        workloads = self.get(f"/api/v1/trials/{trial_id}/workloads", limit=100_000)["workloads"]
        return [int(w["training"]["totalBatches"]) for w in workloads if w.get("training")]

    def wait_trial_state(self, trial_id: int, states: set[str], timeout: float) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            t = self.trial(trial_id)
            if t["state"] in states:
                return t
            if t["state"] in TERMINAL:  # ended some other way: stop waiting, say how
                raise AssertionError(
                    f"trial {trial_id} ended {t['state']}, not {states}; logs:\n"
                    + "\n".join(self.trial_logs(trial_id)[-40:])
                )
            return None

        try:
            return wait_for(reached, timeout, f"trial {trial_id} in {sorted(states)}")
        except TimeoutError as exc:
            logs = "\n".join(self.trial_logs(trial_id)[-40:])
            state = self.trial(trial_id)["state"]
            raise AssertionError(f"{exc}; state {state}; logs:\n{logs}") from None

    def wait_steps(self, trial_id: int, at_least: int, timeout: float) -> list[int]:
        return wait_for(
            lambda: (s := self.training_steps(trial_id)) and len(s) >= at_least and s,
            timeout,
            f"{at_least} training metrics of trial {trial_id}",
        )

    # --- processes -----------------------------------------------------------------------------

    def state(self) -> local.Deployment:
        state = local.read_state(self.data_dir)
        assert state is not None, "the deployment record is gone"
        return state

    def process(self, name: str) -> local.ProcessRecord:
        return next(p for p in self.state().processes if p.name == name)

    def kill9(self, name: str) -> None:
        record = self.process(name)
        assert local.alive(record), f"{name} is not running"
        os.kill(record.pid, signal.SIGKILL)
        wait_for(lambda: not local.alive(record), 10, f"{name} to die")

    def restart_master(self) -> None:
        """Start the master again with the same command line, as an operator would."""
        state = self.state()
        launch = local.master_launch(self.options, sys.executable, self.password)
        record = local.spawn(launch)
        state.processes = [p for p in state.processes if p.name != "master"] + [record]
        local.write_state(state)
        local.wait_for_master(record, self.url, 60)

    def task_supervisors(self, agent: str) -> list[local.ProcessRecord]:
        return local.task_supervisors(self.data_dir / local.AGENTS_DIR / agent)

    def log_tails(self) -> str:
        out = []
        for log in sorted((self.data_dir / local.LOG_DIR).glob("*.log")):
            out.append(f"--- {log.name}\n{local.log_tail(log, 60)}")
        return "\n".join(out)


def wait_for(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {timeout:g} s")
        time.sleep(interval)


Deploy = Callable[..., Deployment]


@pytest.fixture
def deploy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Deploy]:
    """`deploy(agents=1, slots=1, runtime="process")` brings up a deployment; down at the end."""
    config_dir = tmp_path / "det-config"
    monkeypatch.setenv("DET_DEBUG_CONFIG_PATH", str(config_dir))
    for var in ("DET_MASTER", "DET_USER", "DET_PASS", "DET_USER_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    made: list[Deployment] = []

    def make(
        agents: int = 1, slots: int = 1, runtime: str = "process", master_config: str = ""
    ) -> Deployment:
        data_dir = tmp_path / f"deploy{len(made)}"
        config = None
        if master_config:
            data_dir.mkdir(parents=True)
            config = data_dir / "master.yaml"
            config.write_text(master_config)
        options = local.LocalOptions(
            data_dir=data_dir, agents=agents, slots_per_agent=slots, runtime=runtime,
            port=free_port(), master_config=config,
        )  # fmt: skip
        started = local.up(options, timeout_s=120, grace_s=5)
        env = {
            **os.environ,
            "DET_DEBUG_CONFIG_PATH": str(config_dir),
            "DET_USER": "admin",
            "DET_PASS": started.password,
        }
        d = Deployment(options, started.password, started.token, env)
        made.append(d)
        return d

    yield make
    for d in made:
        print(d.log_tails())  # shown when the test failed
        d.http.close()
        local.down(d.data_dir, grace_s=5)


def docker_image_config() -> dict[str, Any]:
    """environment.image + bind_mounts that run the host's Python in the test image."""
    if not local.docker_answers():
        pytest.skip("no Docker engine answers `docker info`")
    from tests.support.docker_image import ensure_test_image

    image = ensure_test_image()
    return {
        "environment": {"image": image.name},
        "bind_mounts": [
            {"host_path": m.host_path, "container_path": m.container_path, "read_only": True}
            for m in image.mounts
        ],
    }


def steps_config(
    steps: int, step_s: float, ckpt_every: int, *, max_restarts: int = 0, **extra: Any
) -> dict[str, Any]:
    return {
        "name": f"e2e-steps-{steps}",
        "entrypoint": "python3 steps.py",
        "hyperparameters": {"steps": steps, "step_s": step_s, "ckpt_every": ckpt_every},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": steps}},
        "max_restarts": max_restarts,
        **extra,
    }
