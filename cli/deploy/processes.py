"""The processes of a local deployment: what to start, starting them detached, and telling
whether a recorded one still runs (pid and start time from /proc) and stopping it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cli.errors import CliError

# What only the client needs; a master or agent started from a shell that has them must not.
CLIENT_ONLY_ENV = ("DET_MASTER", "DET_MASTER_ADDR", "DET_USER", "DET_PASS", "DET_USER_TOKEN")


@dataclass(frozen=True)
class Launch:
    """One process to start: its command line, environment additions and log file."""

    name: str
    role: str  # "master" or "agent"
    argv: tuple[str, ...]
    env: Mapping[str, str]
    log: Path


@dataclass
class ProcessRecord:
    name: str
    role: str
    pid: int
    start_ticks: int | None  # /proc/<pid>/stat field 22; None where /proc is missing
    log: str


def child_environment(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in base.items() if k not in CLIENT_ONLY_ENV}
    env.update(extra)
    return env


def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks) from /proc, or None when there is no such pid."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    rest = raw[raw.rindex(")") + 2 :].split()
    return rest[0], int(rest[19])


def _reap(pid: int) -> None:
    """Collect the exit status if the process is our own child (tests run `up` in-process)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def alive(record: ProcessRecord) -> bool:
    """The recorded process still runs: same pid *and* same start time, and not a zombie."""
    _reap(record.pid)
    if not Path("/proc").is_dir():  # no procfs: fall back to "some process has this pid"
        try:
            os.kill(record.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    stat = proc_stat(record.pid)
    if stat is None or stat[0] in ("Z", "X"):
        return False
    return record.start_ticks is None or stat[1] == record.start_ticks


def send_signal(record: ProcessRecord, signum: int) -> None:
    if alive(record):
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signum)


def spawn(launch: Launch, base_env: Mapping[str, str] | None = None) -> ProcessRecord:
    """Start one process detached (its own session, stdin closed, output to its log)."""
    launch.log.parent.mkdir(parents=True, exist_ok=True)
    env = child_environment(os.environ if base_env is None else base_env, launch.env)
    with open(launch.log, "ab") as log:
        log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(launch.argv)}\n".encode())
        log.flush()
        try:
            proc = subprocess.Popen(
                list(launch.argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise CliError(f"cannot start the {launch.name}: {exc}") from None
    stat = proc_stat(proc.pid)
    return ProcessRecord(
        name=launch.name,
        role=launch.role,
        pid=proc.pid,
        start_ticks=stat[1] if stat else None,
        log=str(launch.log),
    )


def terminate(
    records: Sequence[ProcessRecord],
    grace_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[ProcessRecord]:
    """SIGTERM every live process, SIGKILL those still alive after `grace_s`; returns those."""
    live = [r for r in records if alive(r)]
    for record in live:
        send_signal(record, signal.SIGTERM)
    deadline = clock() + grace_s
    while clock() < deadline and any(alive(r) for r in live):
        sleep(0.05)
    stubborn = [r for r in live if alive(r)]
    for record in stubborn:
        send_signal(record, signal.SIGKILL)
    deadline = clock() + 5.0
    while clock() < deadline and any(alive(r) for r in stubborn):
        sleep(0.05)
    return stubborn
