"""The process runtime's stand-in for a container's init: runs one task and records how it ended.

Run as ``python supervise.py [--user UID:GID] [--ready-fd N] STATE_DIR -- ARGV...`` (or ``-m
agent.runtimes.supervise``) in a session of its own, with the task's environment, working
directory and log files as its own stdout/stderr. It

- starts ARGV in a new process group (so a signal reaches the task's whole tree and not the
  supervisor), with SIGKILL as the parent-death signal: like a container whose init died, the
  task does not outlive its supervisor; with ``--user``, as that uid and gid with no
  supplementary groups (the supervisor, root, stays as it is and can still signal the task);
- writes ``pids.json`` (its own and the task's pid, with their start times from /proc so a reused
  pid is never mistaken for ours), then ``ok`` or ``exited`` on the ready fd;
- passes SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 on to the task's group;
- when the task ends, kills what is left of its group (a container's processes end with it) and
  writes ``exit.json``: the exit code, 128+N for signal N; 127 (126) when ARGV[0] cannot be
  found (executed), with the reason on stderr, as docker-init does.

It imports only the standard library and is started with ``-I -S``, so the task's PYTHONPATH
cannot break it, and it keeps running when the agent that started it exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PIDS_FILE = "pids.json"
EXIT_FILE = "exit.json"
FORWARDED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
_PR_SET_PDEATHSIG = 1


def process_start_time(pid: int) -> int | None:
    """The start time (clock ticks since boot) of a live, unreaped-or-running process, else None.

    A zombie counts as gone: it has exited, only its parent has not collected it yet.
    """
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses; the rest follows the last ')'.
    fields = raw[raw.rindex(b")") + 2 :].split()
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def is_same_process(pid: int | None, start_time: int | None) -> bool:
    return pid is not None and start_time is not None and process_start_time(pid) == start_time


def write_json_atomically(path: Path, data: dict[str, object]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def exit_code_of(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def _child_setup(parent_pid: int, prctl: object) -> None:
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # type: ignore[operator]
    if os.getppid() != parent_pid:  # the supervisor died before prctl took effect
        os._exit(137)


def _report_ready(ready_fd: int | None, word: str) -> None:
    if ready_fd is None:
        return
    try:
        os.write(ready_fd, word.encode() + b"\n")
    finally:
        os.close(ready_fd)


def supervise(
    state_dir: Path, argv: list[str], ready_fd: int | None, user: tuple[int, int] | None = None
) -> int:
    """Runs the task to its end (as ``user``, a (uid, gid), when given); returns the exit code
    it recorded."""
    own = {"supervisor_pid": os.getpid(), "supervisor_start": process_start_time(os.getpid())}
    pending: list[int] = []
    child: subprocess.Popen[bytes] | None = None

    def forward(signum: int, _frame: object) -> None:
        if child is None:
            pending.append(signum)
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)

    libc = ctypes.CDLL(None, use_errno=True)
    parent_pid = os.getpid()
    # setgroups([]), setregid, setreuid happen in the child before preexec_fn: the
    # parent-death signal is set after the credentials change (which would clear it).
    as_user: dict[str, object] = {}
    if user is not None:
        as_user = {"user": user[0], "group": user[1], "extra_groups": []}
    try:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            process_group=0,
            preexec_fn=lambda: _child_setup(parent_pid, libc.prctl),
            **as_user,  # type: ignore[arg-type]
        )
    except OSError as exc:
        code = 127 if exc.errno == errno.ENOENT else 126
        print(f"exec {argv[0]!r} failed: {exc.strerror}", file=sys.stderr, flush=True)
        write_json_atomically(state_dir / PIDS_FILE, own)
        write_json_atomically(state_dir / EXIT_FILE, {"exit_code": code, "ended_at": time.time()})
        _report_ready(ready_fd, "exited")
        return code

    write_json_atomically(
        state_dir / PIDS_FILE,
        {
            **own,
            "child_pid": child.pid,
            "child_pgid": child.pid,
            "child_start": process_start_time(child.pid),
        },
    )
    _report_ready(ready_fd, "ok")
    for signum in pending:
        forward(signum, None)

    _, status = os.waitpid(child.pid, 0)
    code = exit_code_of(status)
    with contextlib.suppress(ProcessLookupError):  # what the task left in its group ends too
        os.killpg(child.pid, signal.SIGKILL)
    write_json_atomically(state_dir / EXIT_FILE, {"exit_code": code, "ended_at": time.time()})
    return code


def main(args: list[str]) -> int:
    ready_fd: int | None = None
    user: tuple[int, int] | None = None
    if args[:1] == ["--user"]:
        uid, _, gid = args[1].partition(":")
        user = (int(uid), int(gid))
        args = args[2:]
    if args[:1] == ["--ready-fd"]:
        ready_fd = int(args[1])
        args = args[2:]
    if len(args) < 3 or args[1] != "--":
        print(
            "usage: supervise [--user UID:GID] [--ready-fd N] STATE_DIR -- ARGV...",
            file=sys.stderr,
        )
        return 2
    supervise(Path(args[0]), args[2:], ready_fd, user)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
