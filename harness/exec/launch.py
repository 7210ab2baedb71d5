"""``python -m harness.exec.launch ARGV...``: what every task container runs.

On a cluster (DET_MASTER and the allocation's variables set): download the context directory
into DET_WORKDIR (or the cwd), run ARGV there as a child, forward SIGTERM/SIGINT to it, echo
its output and ship it to the master line by line, wait up to DET_LOG_WAIT_TIME (30 s) for
the lines to drain, and exit with the child's exit code; 80 when the shipper itself crashed.
Off a cluster it only runs the child. Standard library only: it runs inside any image with a
Python 3.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import namedtuple
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType

from harness.exec.ship_logs import LineSplitter, LogMetadata, LogShipper, StreamParser, make_entry

# typing is only for annotations (strings here): the launcher, which every task runs,
# would pay for importing it.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import IO, Any

    from harness._session import Session

SHIPPER_CRASHED = 80
LAUNCH_FAILED = 1
USAGE = 2
NOT_STARTED = 127  # what a shell answers for a command it cannot run
DEFAULT_LOG_WAIT_S = 30.0
NO_CONTEXT_ENV = "RESOLUTE_NO_CONTEXT"
FORWARDED = (signal.SIGTERM, signal.SIGINT)
# Determined's legacy `model_def:TrialClass` entrypoint names a PyTorchTrial class to train.
LEGACY_ENTRYPOINT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


# A named tuple, not a dataclass: importing `dataclasses` is a fifth of the launcher's start-up.
class LaunchSettings(
    namedtuple(
        "LaunchSettings",
        "master_url token task_id allocation_id agent_id container_id workdir log_wait_s "
        "has_context",
        defaults=(True,),
    )
):
    """The launcher's view of the environment the master and the agent set: ``master_url``
    (str | None), ``token``, ``task_id``, ``allocation_id``, ``agent_id``, ``container_id``
    (str), ``workdir`` (Path), ``log_wait_s`` (float), ``has_context`` (bool; the master says
    False for a task without a context directory, a plain `det cmd run`, which saves every such
    task a round trip; Determined's launcher always asks)."""

    __slots__ = ()

    @property
    def on_cluster(self) -> bool:
        return bool(self.master_url and self.token and self.task_id)

    @classmethod
    def from_env(cls, env: Mapping[str, str], cwd: Path) -> LaunchSettings:
        try:
            wait = float(env.get("DET_LOG_WAIT_TIME") or DEFAULT_LOG_WAIT_S)
        except ValueError:
            wait = DEFAULT_LOG_WAIT_S
        return cls(
            master_url=env.get("DET_MASTER") or None,
            token=env.get("DET_SESSION_TOKEN", ""),
            task_id=env.get("DET_TASK_ID", ""),
            allocation_id=env.get("DET_ALLOCATION_ID", ""),
            agent_id=env.get("DET_AGENT_ID", ""),
            container_id=env.get("DET_CONTAINER_ID", ""),
            workdir=Path(env.get("DET_WORKDIR") or cwd),
            log_wait_s=max(0.0, wait),
            has_context=env.get(NO_CONTEXT_ENV) != "1",
        )


def legacy_command(argv: Sequence[str]) -> list[str] | None:
    """The command that runs Determined's legacy `model_def:TrialClass` entrypoint, if it is one.

    The trial class runs under ``harness.pytorch``'s trainer (``harness/pytorch/_legacy.py``);
    the launcher itself never imports torch.
    """
    if len(argv) == 1 and LEGACY_ENTRYPOINT.match(argv[0]):
        return ["python3", "-m", "harness.pytorch._legacy", argv[0]]
    return None


def exit_code(returncode: int) -> int:
    """A child killed by signal N exits 128+N, as a shell reports it."""
    return 128 - returncode if returncode < 0 else returncode


class _Forwarder:
    """Passes SIGTERM/SIGINT on to the child instead of dying of them."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self.child = child
        self.previous = {sig: signal.signal(sig, self._handle) for sig in FORWARDED}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.child.send_signal(signum)

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def _echo(out: IO[bytes], data: bytes) -> None:
    try:
        out.write(data)
        out.flush()
    except (OSError, ValueError):  # our own stdout went away: keep shipping regardless
        pass


def _pump(
    pipe: IO[bytes], echo: IO[bytes], parser: StreamParser, shipper: LogShipper | None
) -> None:
    splitter = LineSplitter()
    fd = pipe.fileno()
    while True:
        chunk = os.read(fd, 1 << 16)
        pieces = splitter.feed(chunk) if chunk else splitter.finish()
        if pieces:
            now = time.time()
            for piece, _ in pieces:
                _echo(echo, piece)
            if shipper is not None:
                shipper.ship([parser.entry(p, cont, now) for p, cont in pieces])
        if not chunk:
            return


def run_off_cluster(argv: Sequence[str], workdir: Path) -> int:
    try:
        child = subprocess.Popen(list(argv), cwd=workdir)
    except OSError as exc:
        print(f"[launcher] could not start {list(argv)!r}: {exc}", file=sys.stderr)
        return NOT_STARTED
    forwarder = _Forwarder(child)
    try:
        return exit_code(child.wait())
    finally:
        forwarder.restore()


def _say(shipper: LogShipper, meta: LogMetadata, text: str) -> None:
    print(text, file=sys.stderr, flush=True)
    shipper.ship([make_entry(meta, text + "\n", "stderr", time.time(), "ERROR")])


class _LazySession:
    """A Session made at its first request. Every task pays for the launcher's start-up, and
    one that prints nothing and has no context directory never talks to the master: the HTTP
    stack's imports (http.client, email, ssl) were a third of that start-up."""

    def __init__(self, master_url: str, token: str) -> None:
        self._args = (master_url, token)
        self._session: Session | None = None
        self._lock = threading.Lock()

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        with self._lock:
            if self._session is None:
                from harness._session import Session

                self._session = Session(*self._args)
        return self._session.request(method, path, **kwargs)


def run_on_cluster(argv: Sequence[str], settings: LaunchSettings) -> int:
    assert settings.master_url is not None
    session = _LazySession(settings.master_url, settings.token)
    meta = LogMetadata(
        task_id=settings.task_id,
        allocation_id=settings.allocation_id or None,
        agent_id=settings.agent_id or None,
        container_id=settings.container_id or None,
    )
    shipper = LogShipper(session, meta).start()
    code = _prepare_and_run(argv, settings, session, shipper, meta)
    drained = shipper.close(settings.log_wait_s)
    if shipper.crashed is not None:
        return SHIPPER_CRASHED
    if not drained:
        print("[launcher] some log lines could not be shipped in time", file=sys.stderr)
    return code


def _prepare_and_run(
    argv: Sequence[str],
    settings: LaunchSettings,
    session: _LazySession,
    shipper: LogShipper,
    meta: LogMetadata,
) -> int:
    argv = legacy_command(argv) or argv
    if settings.has_context:
        from harness._session import APIError, MasterUnreachable
        from harness.exec import context_directory

        try:
            context_directory.download(session, settings.task_id, settings.workdir)
        except (APIError, MasterUnreachable, context_directory.UnsafeArchive, OSError) as exc:
            _say(shipper, meta, f"[launcher] could not prepare the context directory: {exc}")
            return LAUNCH_FAILED
    try:
        child = subprocess.Popen(
            list(argv), cwd=settings.workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as exc:
        _say(shipper, meta, f"[launcher] could not start {list(argv)!r}: {exc}")
        return NOT_STARTED
    forwarder = _Forwarder(child)
    assert child.stdout is not None and child.stderr is not None
    pumps = [
        threading.Thread(
            target=_pump,
            args=(pipe, echo, StreamParser(meta, stdtype), shipper),
            name=f"pump-{stdtype}",
            daemon=True,
        )
        for pipe, echo, stdtype in (
            (child.stdout, sys.stdout.buffer, "stdout"),
            (child.stderr, sys.stderr.buffer, "stderr"),
        )
    ]
    for pump in pumps:
        pump.start()
    try:
        returncode = child.wait()
    finally:
        forwarder.restore()
    # A grandchild that inherited the pipes may keep them open: do not wait for it forever.
    deadline = time.monotonic() + settings.log_wait_s
    for pump in pumps:
        pump.join(max(0.0, deadline - time.monotonic()))
    return exit_code(returncode)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python -m harness.exec.launch COMMAND [ARG...]", file=sys.stderr)
        return USAGE
    settings = LaunchSettings.from_env(os.environ, Path.cwd())
    if not settings.on_cluster:
        return run_off_cluster(legacy_command(args) or args, settings.workdir)
    settings.workdir.mkdir(parents=True, exist_ok=True)
    return run_on_cluster(args, settings)


if __name__ == "__main__":
    sys.exit(main())
