"""Plays the part of the VMs of a fake cloud: runs each running instance's real start-up script.

A "cloud view" is a callable returning, for every instance the fake cloud (moto, the fake GCE)
knows, `(instance_id, agent_name, state, startup_script_text)`. Every time an instance shows as
running, the runner gives it a fake metadata server (its AWS instance id is `instance_id`, its
GCE instance name `agent_name`) and runs its start-up script with bash in a sandbox directory of
its own, in a process group of its own. When the instance stops showing as running (terminated,
stopped, gone), the runner kills that group and the agent's task processes, as a dying VM would.

The script runs as on a VM except for what its documented RESOLUTE_* variables move: its root
(the sandbox), the metadata server (the fake), the agent install (a link to this repository's
`.venv/bin/det-agent`), the process runtime, the agent in the foreground, and extra agent flags
(artificial slots by default, so a "GPU" pool's agent has slots on a machine without GPUs).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from agent.runtimes import supervise
from tests.support.fake_metadata import FakeMetadata

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"

CloudView = Callable[[], Iterable[tuple[str, str, str, str]]]


@dataclass
class VirtualMachine:
    """One instance the runner started: its sandbox, metadata server and script process."""

    instance_id: str
    agent_name: str
    root: Path
    metadata: FakeMetadata
    process: subprocess.Popen[bytes]
    log_path: Path
    ended: bool = False

    def log(self) -> str:
        """What the start-up script and the agent printed so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class InstanceRunner:
    """Watches `view` and keeps one running start-up script per running instance.

    `sync()` does one pass; `start()` runs passes every `interval_s` in a thread (the view may
    block, e.g. on boto3) until `stop()`, which also ends every instance still running.
    """

    view: CloudView
    sandbox: Path
    slots: int | None = 2
    agent_args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    interval_s: float = 0.2
    venv_bin: Path = VENV_BIN
    machines: dict[str, VirtualMachine] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    # --- the loop ------------------------------------------------------------------------------

    def sync(self) -> None:
        """Start the scripts of instances that became running; end those that left it."""
        listed = list(self.view())
        with self._lock:
            running = {iid: (name, script) for iid, name, state, script in listed if _runs(state)}
            for instance_id, machine in self.machines.items():
                if not machine.ended and instance_id not in running:
                    self._end(machine)
            for instance_id, (name, script) in running.items():
                if instance_id not in self.machines:
                    self.machines[instance_id] = self._boot(instance_id, name, script)

    def start(self) -> InstanceRunner:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="instance-runner", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync()
            except Exception as exc:  # kept for the test to see; the cloud may be briefly odd
                self.errors.append(exc)
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        """Stop watching and end every instance still running."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
            self._thread = None
        with self._lock:
            for machine in self.machines.values():
                if not machine.ended:
                    self._end(machine)

    def __enter__(self) -> InstanceRunner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- backdoors -----------------------------------------------------------------------------

    def notice(
        self, instance_id: str, action: str = "terminate", at: datetime | None = None
    ) -> None:
        """Raise the instance's spot interruption (AWS) / preemption (GCE) notice."""
        self.machines[instance_id].metadata.notice(action, at)

    def machine(self, instance_id: str) -> VirtualMachine:
        return self.machines[instance_id]

    def running_ids(self) -> set[str]:
        with self._lock:
            return {iid for iid, m in self.machines.items() if not m.ended}

    # --- one VM --------------------------------------------------------------------------------

    def _boot(self, instance_id: str, agent_name: str, script: str) -> VirtualMachine:
        root = self.sandbox / _safe(instance_id)
        root.mkdir(parents=True, exist_ok=True)
        (root / "startup-script.sh").write_text(script)
        metadata = FakeMetadata(instance_id, agent_name).start()
        log_path = root / "console.log"
        with log_path.open("ab") as out:
            process = subprocess.Popen(
                ["bash", str(root / "startup-script.sh")],
                cwd=root,
                env=self._script_env(root, metadata),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return VirtualMachine(instance_id, agent_name, root, metadata, process, log_path)

    def _script_env(self, root: Path, metadata: FakeMetadata) -> dict[str, str]:
        # The test's own DET_* / RESOLUTE_* must not leak into the "VM".
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DET_", "RESOLUTE_"))}
        link = shlex.quote(str(self.venv_bin / "det-agent"))
        extra = [*(("--artificial-slots", str(self.slots)) if self.slots else ()), *self.agent_args]
        env.update(
            RESOLUTE_SETUP_ROOT=str(root),
            RESOLUTE_METADATA_URL=metadata.url,
            RESOLUTE_METADATA_TRIES="10",
            RESOLUTE_AGENT_INSTALL=(
                f'mkdir -p "$RESOLUTE_SETUP_ROOT/bin" && '
                f'ln -sf {link} "$RESOLUTE_SETUP_ROOT/bin/det-agent"'
            ),
            RESOLUTE_CONTAINER_RUNTIME="process",
            RESOLUTE_AGENT_FOREGROUND="1",
            RESOLUTE_AGENT_EXTRA_ARGS=" ".join(extra),
        )
        env.update(self.env)
        return env

    def _end(self, machine: VirtualMachine) -> None:
        """Power off: the script's group, then the agent's task processes (their own groups)."""
        machine.ended = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(machine.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            machine.process.wait(10)
        kill_tasks(machine.root / "work" / "process")
        machine.metadata.stop()


def _runs(state: str) -> bool:
    return str(state).lower() == "running"


def _safe(instance_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in instance_id)


def kill_tasks(state_dir: Path) -> None:
    """SIGKILL every task of the process-runtime state directories under `state_dir`
    (supervisor and task group). A stopped agent leaves its tasks running for the next one to
    reattach; a test that ends must not leave them running on the machine."""
    for pids_file in state_dir.rglob(supervise.PIDS_FILE):
        try:
            pids = json.loads(pids_file.read_text())
        except (OSError, ValueError):
            continue
        if supervise.is_same_process(pids.get("child_pid"), pids.get("child_start")):
            with contextlib.suppress(ProcessLookupError, KeyError):
                os.killpg(pids["child_pgid"], signal.SIGKILL)
        if supervise.is_same_process(pids.get("supervisor_pid"), pids.get("supervisor_start")):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pids["supervisor_pid"], signal.SIGKILL)
