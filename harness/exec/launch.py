"""``python -m harness.exec.launch ARGV...``: what every task container runs.

On a cluster (DET_MASTER and the allocation's variables set): download the context directory
into DET_WORKDIR (or the cwd), run ARGV there as a child (after sourcing the context's
startup-hook.sh, if it has one, as Determined does), forward SIGTERM/SIGINT to it, echo
its output and ship it to the master line by line, wait up to DET_LOG_WAIT_TIME (30 s) for
the lines to drain, and exit with the child's exit code; 80 when the shipper itself crashed.
Off a cluster it only runs the child. Standard library only: it runs inside any image with a
Python 3.

Every task pays for this module's start-up, a trivial `det cmd run true` included, so it imports
only builtin modules (os, select, _signal) up front: the child is spawned with ``posix_spawnp``
(``subprocess`` and its imports cost more than the rest of the launcher), its two pipes are read
by one ``poll`` loop in the main thread, and the log shipper (threads, the line parser, later
the HTTP stack) is made only when the child prints something. A child that prints nothing and
has no context directory costs an interpreter start and two system calls.
"""

from __future__ import annotations

import _signal  # builtin; the `signal` module builds enums on import
import _thread
import os
import sys

# typing is only for annotations (strings here): the launcher, which every task runs,
# would pay for importing it.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from types import FrameType
    from typing import Any

    from harness._session import Session
    from harness.exec.ship_logs import LineSplitter, LogMetadata, LogShipper, StreamParser

SHIPPER_CRASHED = 80
LAUNCH_FAILED = 1
USAGE = 2
NOT_STARTED = 127  # what a shell answers for a command it cannot run
DEFAULT_LOG_WAIT_S = 30.0
NO_CONTEXT_ENV = "RESOLUTE_NO_CONTEXT"
FORWARDED = (_signal.SIGTERM, _signal.SIGINT)
# Python ignores these; a child must get them back at their defaults, as subprocess does.
RESET_IN_CHILD = tuple(
    getattr(_signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(_signal, name)
)
READ_BYTES = 1 << 16
# Determined's task entrypoints source this file of the context directory (its top level, the
# task's working directory) before the task's command, in every task type, with `set -e` on:
# what it exports reaches the command, and a failing line fails the task.
STARTUP_HOOK = "startup-hook.sh"
# Sourced from a function, whose arguments are its own: a hook's `set --` or `shift` leaves the
# command's arguments alone.
HOOK_SCRIPT = 'set -e; hook() { . ./startup-hook.sh; }; hook; set +e; exec "$@"'
# Without pidfd_open (Python < 3.9, Linux < 5.3) the loop looks at the child this often while
# its pipes stay open.
CHILD_POLL_S = 0.1


class LaunchSettings:
    """The launcher's view of the environment the master and the agent set: ``master_url``
    (str | None), ``token``, ``task_id``, ``allocation_id``, ``agent_id``, ``container_id``,
    ``workdir`` (str), ``log_wait_s`` (float), ``has_context`` (bool; the master says
    False for a task without a context directory, a plain `det cmd run`, which saves every such
    task a round trip; Determined's launcher always asks). A plain class: a named tuple or a
    dataclass costs the launcher an import."""

    __slots__ = (
        "agent_id",
        "allocation_id",
        "container_id",
        "has_context",
        "log_wait_s",
        "master_url",
        "task_id",
        "token",
        "workdir",
    )

    def __init__(
        self,
        master_url: str | None,
        token: str,
        task_id: str,
        allocation_id: str,
        agent_id: str,
        container_id: str,
        workdir: str,
        log_wait_s: float,
        has_context: bool = True,
    ) -> None:
        self.master_url = master_url
        self.token = token
        self.task_id = task_id
        self.allocation_id = allocation_id
        self.agent_id = agent_id
        self.container_id = container_id
        self.workdir = workdir
        self.log_wait_s = log_wait_s
        self.has_context = has_context

    @property
    def on_cluster(self) -> bool:
        return bool(self.master_url and self.token and self.task_id)

    @classmethod
    def from_env(cls, env: Mapping[str, str], cwd: str) -> LaunchSettings:
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
            workdir=str(env.get("DET_WORKDIR") or cwd),
            log_wait_s=max(0.0, wait),
            has_context=env.get(NO_CONTEXT_ENV) != "1",
        )


def legacy_command(argv: Sequence[str]) -> list[str] | None:
    """The command that runs Determined's legacy `model_def:TrialClass` entrypoint, if it is one.

    The trial class runs under ``harness.pytorch``'s trainer (``harness/pytorch/_legacy.py``);
    the launcher itself never imports torch.
    """
    if len(argv) != 1 or ":" not in argv[0]:
        return None
    import re  # only for a lone word with a colon: every other task skips the import

    # Determined's legacy `model_def:TrialClass` entrypoint names a PyTorchTrial class to train.
    if re.match(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", argv[0]):
        return ["python3", "-m", "harness.pytorch._legacy", argv[0]]
    return None


def with_startup_hook(argv: Sequence[str], workdir: str) -> list[str]:
    """`argv`, run after `startup-hook.sh` is sourced if the working directory has one (by
    bash, as Determined's entrypoints do, where the image has it; else by sh)."""
    if not os.path.isfile(os.path.join(workdir, STARTUP_HOOK)):
        return list(argv)
    shell = "bash" if _on_path("bash") else "sh"
    return [shell, "-c", HOOK_SCRIPT, STARTUP_HOOK, *argv]


def _on_path(name: str) -> bool:
    # shutil.which would cost the launcher its import (and fnmatch's, re's) on every start.
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return True
    return False


def exit_code(returncode: int) -> int:
    """A child killed by signal N exits 128+N, as a shell reports it."""
    return 128 - returncode if returncode < 0 else returncode


def returncode_of(status: int) -> int:
    """waitpid's status as subprocess reports it: -N for a signal (os.waitstatus_to_exitcode
    arrived in Python 3.9)."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


class _Child:
    """The user's command, spawned without subprocess; SIGTERM/SIGINT sent to the launcher are
    passed on to it instead of killing the launcher."""

    def __init__(self, argv: Sequence[str], pipes: bool, cwd: str) -> None:
        self.pid = 0
        self.status: int | None = None
        self.pending: int | None = None  # a signal that came before the child had a pid
        self.outputs: list[int] = []
        actions = []
        ends: list[int] = []
        if pipes:
            for target in (1, 2):
                read, write = os.pipe()  # both non-inheritable: the child keeps only its dup2
                ends.append(write)
                self.outputs.append(read)
                actions.append((os.POSIX_SPAWN_DUP2, write, target))
        self.previous = {sig: _signal.signal(sig, self._forward) for sig in FORWARDED}
        try:
            os.chdir(cwd)  # the launcher's own cwd does not matter; posix_spawn has no cwd
            self.pid = os.posix_spawnp(
                argv[0], list(argv), os.environ, file_actions=actions, setsigdef=RESET_IN_CHILD
            )
        except BaseException:
            for fd in self.outputs:
                os.close(fd)
            self.restore()
            raise
        finally:
            for fd in ends:
                os.close(fd)
        if self.pending is not None:
            self._forward(self.pending, None)

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        if not self.pid:  # os.kill(0, ...) would signal our whole process group
            self.pending = signum
        elif self.status is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:  # it has just exited
                return

    def poll(self) -> int | None:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status

    def wait(self) -> int:
        if self.status is None:
            self.status = os.waitpid(self.pid, 0)[1]
        return returncode_of(self.status)

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            _signal.signal(sig, handler)


def _spawn(argv: Sequence[str], pipes: bool, cwd: str, say: Any) -> _Child | None:
    try:
        return _Child(argv, pipes, cwd)
    except OSError as exc:
        say(f"[launcher] could not start {list(argv)!r}: {exc}")
        return None


def run_off_cluster(argv: Sequence[str], workdir: str) -> int:
    child = _spawn(argv, False, workdir, lambda text: print(text, file=sys.stderr))
    if child is None:
        return NOT_STARTED
    try:
        return exit_code(child.wait())
    finally:
        child.restore()


class _Shipping:
    """The log shipper and the line parsers, made at the first output (or launcher message):
    their imports, threads and the HTTP stack are what a silent task never needs."""

    def __init__(self, settings: LaunchSettings) -> None:
        assert settings.master_url is not None
        self.settings = settings
        self.session = _LazySession(settings.master_url, settings.token)
        self.shipper: LogShipper | None = None
        self._streams: dict[int, tuple[LineSplitter, StreamParser]] = {}
        self._meta: LogMetadata | None = None

    def _start(self) -> LogShipper:
        if self.shipper is None:
            from harness.exec.ship_logs import LogMetadata, LogShipper

            s = self.settings
            self._meta = LogMetadata(
                task_id=s.task_id,
                allocation_id=s.allocation_id or None,
                agent_id=s.agent_id or None,
                container_id=s.container_id or None,
            )
            self.shipper = LogShipper(self.session, self._meta).start()
        return self.shipper

    def output(self, fd: int, stdtype: str, chunk: bytes) -> None:
        """One chunk of the child's stdout (fd 1) or stderr (2): echo it and ship its lines; an
        empty chunk is the end of that stream."""
        shipper = self._start()
        if fd not in self._streams:
            from harness.exec.ship_logs import LineSplitter, StreamParser

            assert self._meta is not None
            self._streams[fd] = (LineSplitter(), StreamParser(self._meta, stdtype))
        splitter, parser = self._streams[fd]
        pieces = splitter.feed(chunk) if chunk else splitter.finish()
        if pieces:
            import time

            now = time.time()
            for piece, _ in pieces:
                _echo(fd, piece)
            shipper.ship([parser.entry(p, cont, now) for p, cont in pieces])

    def end(self, fd: int, stdtype: str) -> None:
        if fd in self._streams:
            self.output(fd, stdtype, b"")

    def say(self, text: str) -> None:
        """A launcher message: on our stderr and shipped at level ERROR."""
        import time

        from harness.exec.ship_logs import make_entry

        shipper = self._start()
        assert self._meta is not None
        print(text, file=sys.stderr, flush=True)
        shipper.ship([make_entry(self._meta, text + "\n", "stderr", time.time(), "ERROR")])

    def close(self) -> int | None:
        """None when every line went out (or none was printed); else the exit code to use."""
        if self.shipper is None:
            return None
        drained = self.shipper.close(self.settings.log_wait_s)
        if self.shipper.crashed is not None:
            return SHIPPER_CRASHED
        if not drained:
            print("[launcher] some log lines could not be shipped in time", file=sys.stderr)
        return None


def _echo(fd: int, data: bytes) -> None:
    """The child's output on our own stdout/stderr (the container's log)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:  # our own output went away: keep shipping regardless
        pass


class _LazySession:
    """A Session made at its first request. Every task pays for the launcher's start-up, and
    one that prints nothing and has no context directory never talks to the master: the HTTP
    stack's imports (http.client, email, ssl) were a third of that start-up."""

    def __init__(self, master_url: str, token: str) -> None:
        self._args = (master_url, token)
        self._session: Session | None = None
        # The shipper's thread and the launcher may both ask first; _thread is builtin.
        self._lock = _thread.allocate_lock()

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        with self._lock:
            if self._session is None:
                from harness._session import Session

                self._session = Session(*self._args)
        return self._session.request(method, path, **kwargs)


def run_on_cluster(argv: Sequence[str], settings: LaunchSettings) -> int:
    shipping = _Shipping(settings)
    code = _prepare_and_run(argv, settings, shipping)
    crashed = shipping.close()
    return code if crashed is None else crashed


def _prepare_and_run(argv: Sequence[str], settings: LaunchSettings, shipping: _Shipping) -> int:
    argv = legacy_command(argv) or argv
    if settings.has_context:
        from pathlib import Path

        from harness._session import APIError, MasterUnreachable
        from harness.exec import context_directory

        try:
            context_directory.download(shipping.session, settings.task_id, Path(settings.workdir))
        except (APIError, MasterUnreachable, context_directory.UnsafeArchive, OSError) as exc:
            shipping.say(f"[launcher] could not prepare the context directory: {exc}")
            return LAUNCH_FAILED
    argv = with_startup_hook(argv, settings.workdir)
    child = _spawn(argv, True, settings.workdir, shipping.say)
    if child is None:
        return NOT_STARTED
    try:
        _pump(child, shipping, settings.log_wait_s)
        return exit_code(child.wait())
    finally:
        child.restore()


def _pump(child: _Child, shipping: _Shipping, log_wait_s: float) -> None:
    """Reads both pipes until they end. Once the child has exited, a grandchild that inherited
    the pipes may keep them open: they are read for at most ``log_wait_s`` more."""
    import select
    import time

    names = {child.outputs[0]: (1, "stdout"), child.outputs[1]: (2, "stderr")}
    poller = select.poll()
    for fd in names:
        poller.register(fd, select.POLLIN)
    exited = None
    try:
        exited = os.pidfd_open(child.pid)  # type: ignore[attr-defined]
        poller.register(exited, select.POLLIN)
    except (AttributeError, OSError):  # older Python or kernel: look now and then
        pass
    deadline = None
    open_fds = set(names)
    try:
        while open_fds:
            timeout_s = None if exited is not None else CHILD_POLL_S
            if deadline is not None:
                timeout_s = max(0.0, deadline - time.monotonic())
            events = poller.poll(None if timeout_s is None else timeout_s * 1000)
            for fd, _ in events:
                if fd == exited:
                    poller.unregister(exited)
                    continue
                target, stdtype = names[fd]
                chunk = os.read(fd, READ_BYTES)
                if chunk:
                    shipping.output(target, stdtype, chunk)
                    continue
                shipping.end(target, stdtype)
                poller.unregister(fd)
                open_fds.discard(fd)
            if deadline is None and open_fds and child.poll() is not None:
                deadline = time.monotonic() + log_wait_s
            elif deadline is not None and time.monotonic() >= deadline:
                for fd in open_fds:
                    shipping.end(*names[fd])
                break
    finally:
        for fd in names:
            os.close(fd)
        if exited is not None:
            os.close(exited)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python -m harness.exec.launch COMMAND [ARG...]", file=sys.stderr)
        return USAGE
    settings = LaunchSettings.from_env(os.environ, os.getcwd())
    if not settings.on_cluster:
        return run_off_cluster(legacy_command(args) or args, settings.workdir)
    os.makedirs(settings.workdir, exist_ok=True)
    return run_on_cluster(args, settings)


if __name__ == "__main__":
    sys.exit(main())
