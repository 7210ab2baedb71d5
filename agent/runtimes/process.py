"""The ``process`` runtime: each task is a process group on this machine, for hosts with no Docker.

Each container is a folder ``STATE_DIR/<container id>/`` holding ``record.json`` (agent, labels,
argv), the task's ``stdout.log`` and ``stderr.log``, and what the supervisor
(``agent/runtimes/supervise.py``) writes: ``pids.json`` and, at the end, ``exit.json``. The
supervisor runs in a session of its own, so tasks outlive the agent; a new runtime object (the
agent restarted) finds them again from these folders, running or exited, and waits on them.

Where it differs from the docker runtime (docs/runtimes.md):
- ``image`` is ignored: the task runs on this machine's userland with the task's Python
  (agent/task_python.py): ``request.python``, else the runtime's default (the agent passes its
  ``task_python`` setting or its own task venv, never its own interpreter). An argv[0] of
  ``python3`` or ``python`` runs that interpreter, and its folder comes first on the task's
  ``PATH`` (the agent's own virtualenv is taken off it), so ``python3 train.py`` and ``pip``
  inside the task find the same one; ``VIRTUAL_ENV`` names its virtualenv, if it has one.
- ``mounts`` are left in place: the task sees host paths (nothing is made read-only), and
  ``shm_size_bytes`` is ignored.
- The run dir is used where it is (``DET_RUN_DIR`` is its host path).
- With ``request.user`` (the agent is root), the supervisor stays root and starts the task as
  that uid and gid with no supplementary groups; the run dir becomes the task user's (0700) and
  ``HOME``, ``USER`` and ``LOGNAME`` name the task user. The task's folder here (its logs) stays
  the agent's (0700). The pylib, the task's Python and its shared storage must be reachable by
  the task user (docs/agent.md).
- The task inherits the agent's environment minus its ``DET_*``, ``PYTHONPATH``, ``PYTHONHOME``
  and ``VIRTUAL_ENV``; CUDA devices become ``CUDA_VISIBLE_DEVICES`` (UUIDs where known), and a
  task with none gets ``CUDA_VISIBLE_DEVICES=""``, as a container without GPUs sees none.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import task_python
from agent.protocol import TaskUser
from agent.run_dir import HOME, RunDirError, give_run_dir
from agent.runtimes import supervise
from agent.runtimes.base import Found, LaunchFailed, RunRequest, UnknownContainer
from agent.runtimes.labels import container_labels, cuda_devices, is_valid_container_id
from agent.task_python import BadTaskPython, TaskPython

RECORD_FILE = "record.json"
STREAMS = ("stdout", "stderr")
# A container whose supervisor vanished without recording an exit was killed with it (the task
# gets SIGKILL as its parent-death signal), or the machine restarted: report it as SIGKILLed.
LOST_EXIT_CODE = 128 + signal.SIGKILL
READY_TIMEOUT_S = 30.0
KILL_WAIT_S = 30.0
LOG_CHUNK = 256 * 1024
_PYTHON_NAMES = ("python", "python3")
_DROPPED_ENV_PREFIXES = ("DET_",)
_DROPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "CUDA_VISIBLE_DEVICES", "VIRTUAL_ENV")


def home_of(user: TaskUser, run_dir: Path) -> str:
    """HOME for a task run as ``user``: its passwd home when that is a folder it owns, else the
    run dir's ``home/`` (a uid with no passwd entry, or ``nobody``'s /nonexistent)."""
    try:
        home = pwd.getpwuid(user.uid).pw_dir
        if home and os.stat(home).st_uid == user.uid and os.path.isdir(home):
            return home
    except (KeyError, OSError):
        pass
    return str(run_dir / HOME)


def task_environment(
    request: RunRequest,
    inherited: Mapping[str, str],
    run_dir: Path,
    python: TaskPython | None = None,
    hidden: tuple[str, ...] = (),
) -> dict[str, str]:
    """The task's variables: the agent's (minus its own settings), PATH led by the task's
    Python and without the folders in ``hidden`` (the agent's virtualenv), the task user's
    HOME, USER and LOGNAME when it runs as one, then the request's."""
    env = {
        k: v
        for k, v in inherited.items()
        if not k.startswith(_DROPPED_ENV_PREFIXES) and k not in _DROPPED_ENV
    }
    if python is not None:
        env["PATH"] = task_python.task_path(env.get("PATH", os.defpath), python, hidden)
        if python.venv:
            env["VIRTUAL_ENV"] = python.venv
    if request.user is not None:
        env["HOME"] = home_of(request.user, run_dir)
        name = request.user.user or str(request.user.uid)
        env["USER"] = env["LOGNAME"] = name
    env.update(request.environment)
    env["DET_RUN_DIR"] = str(run_dir)
    env["DET_WORKDIR"] = str(run_dir / "workdir")
    extra = request.environment.get("PYTHONPATH")
    pylib = request.pylib or run_dir / "pylib"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(pylib), extra) if p)
    cuda = cuda_devices(request.devices)
    if cuda:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(d.uuid or str(d.id) for d in cuda)
    else:
        env.setdefault("CUDA_VISIBLE_DEVICES", "")
    return env


def task_argv(argv: tuple[str, ...], python: str) -> list[str]:
    if argv[0] in _PYTHON_NAMES:
        return [python, *argv[1:]]
    return list(argv)


@dataclass(frozen=True)
class _Status:
    running: bool
    exit_code: int | None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class ProcessRuntime:
    name = "process"

    def __init__(self, state_dir: Path, *, python: str = "") -> None:
        """``python``: the task's Python for requests that name none (agent/task_python.py);
        with neither, a launch fails rather than fall back to the agent's own interpreter."""
        self._state_dir = state_dir
        self._python = python
        self._hidden = task_python.agent_bin_dirs()
        # Supervisors this object started: kept only to reap them (they are our children).
        self._children: dict[str, subprocess.Popen[bytes]] = {}
        self._starting: set[str] = set()

    # --- start ---------------------------------------------------------------------------------

    async def start(self, request: RunRequest) -> None:
        if not is_valid_container_id(request.container_id):
            raise LaunchFailed(f"invalid container id {request.container_id!r}")
        if not request.argv:
            raise LaunchFailed("no command to run")
        folder = self._folder(request.container_id)
        if folder.exists() or request.container_id in self._starting:
            raise LaunchFailed(f"container {request.container_id} already exists")
        self._starting.add(request.container_id)
        try:
            proc = await asyncio.to_thread(self._spawn, request, folder)
            self._children[request.container_id] = proc
        finally:
            self._starting.discard(request.container_id)

    def _task_python(self, request: RunRequest) -> TaskPython:
        value = request.python or self._python
        if not value:
            raise LaunchFailed(
                "no Python for the task: set environment.python, the pool's "
                "task_container_defaults.python or the agent's task_python"
            )
        try:
            return task_python.resolve(
                value, search_path=os.environ.get("PATH", os.defpath), hidden=self._hidden
            )
        except BadTaskPython as exc:
            raise LaunchFailed(f"the task's Python {value!r}: {exc}") from exc

    def _spawn(self, request: RunRequest, folder: Path) -> subprocess.Popen[bytes]:
        run_dir = request.run_dir.absolute()
        python = self._task_python(request)  # before anything is written: nothing to undo
        workdir = run_dir / "workdir"
        try:
            workdir.mkdir(parents=True, exist_ok=True)
            self._state_dir.mkdir(parents=True, exist_ok=True)
            # The agent's alone: the task's logs are written through inherited descriptors.
            folder.mkdir(mode=0o700)
            if request.user is not None:
                give_run_dir(run_dir, request.user.uid, request.user.gid)
        except (OSError, RunDirError) as exc:
            raise LaunchFailed(f"cannot prepare the task's folders: {exc}") from exc
        record = {
            "container_id": request.container_id,
            "agent_id": request.agent_id,
            "labels": container_labels(request),
            "argv": list(request.argv),
            "python": python.interpreter,
            "run_dir": str(run_dir),
            "created_at": time.time(),
            "user": None if request.user is None else request.user.key,
        }
        supervise.write_json_atomically(folder / RECORD_FILE, record)
        env = task_environment(request, os.environ, run_dir, python, self._hidden)
        argv = task_argv(request.argv, python.interpreter)
        try:
            return self._spawn_supervisor(folder, workdir, env, argv, request.user)
        except LaunchFailed:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def _spawn_supervisor(
        self,
        folder: Path,
        workdir: Path,
        env: dict[str, str],
        argv: list[str],
        user: TaskUser | None = None,
    ) -> subprocess.Popen[bytes]:
        # The supervisor is the agent's code (standard library only): the agent's interpreter,
        # isolated, runs it; it then executes the task's argv with the task's environment, as
        # the task's user when there is one (the supervisor itself stays the agent's user).
        command = [sys.executable, "-I", "-S", supervise.__file__]
        if user is not None:
            command += ["--user", user.key]
        ready_r, ready_w = os.pipe()
        out = os.open(folder / "stdout.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        err = os.open(folder / "stderr.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            proc = subprocess.Popen(
                [*command, "--ready-fd", str(ready_w), str(folder), "--", *argv],
                env=env,
                cwd=workdir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                pass_fds=(ready_w,),
            )
        except OSError as exc:
            os.close(ready_r)
            raise LaunchFailed(f"cannot start the task's supervisor: {exc}") from exc
        finally:
            for fd in (ready_w, out, err):
                os.close(fd)
        try:
            word = _read_ready(ready_r, READY_TIMEOUT_S)
        finally:
            os.close(ready_r)
        if word not in ("ok", "exited"):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            tail = (folder / "stderr.log").read_bytes()[-2000:].decode(errors="replace")
            raise LaunchFailed(f"the task's supervisor did not start: {tail.strip()}")
        return proc

    # --- watch and signal ----------------------------------------------------------------------

    async def wait(self, container_id: str) -> int:
        folder = self._existing(container_id)
        while True:
            status = self._status(folder)
            if status.exit_code is not None:
                self._reap(container_id)
                return status.exit_code
            pids = _read_json(folder / supervise.PIDS_FILE)
            if pids is None:  # still starting: the supervisor writes its pids within moments
                await asyncio.sleep(0.01)
                continue
            await _until_gone(pids["supervisor_pid"], pids["supervisor_start"])

    async def signal(self, container_id: str, signum: int) -> None:
        folder = self._existing(container_id)
        pids = _read_json(folder / supervise.PIDS_FILE) or {}
        if (folder / supervise.EXIT_FILE).exists() or "child_pid" not in pids:
            return
        # The start time guards against a reused pid: never signal a stranger's group.
        if supervise.is_same_process(pids["child_pid"], pids["child_start"]):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pids["child_pgid"], signum)

    async def stop(self, container_id: str, grace_s: float) -> None:
        await self.signal(container_id, signal.SIGTERM)
        try:
            await asyncio.wait_for(self.wait(container_id), timeout=max(grace_s, 0.0))
            return
        except TimeoutError:
            pass
        await self.signal(container_id, signal.SIGKILL)
        await asyncio.wait_for(self.wait(container_id), timeout=KILL_WAIT_S)

    # --- find and remove -----------------------------------------------------------------------

    async def find(self, agent_id: str) -> list[Found]:
        return await asyncio.to_thread(self._find, agent_id)

    def _find(self, agent_id: str) -> list[Found]:
        found = []
        for folder in sorted(self._state_dir.glob(f"*/{RECORD_FILE}")):
            record = _read_json(folder)
            if record is None or record.get("agent_id") != agent_id:
                continue
            status = self._status(folder.parent)
            found.append(
                Found(
                    container_id=record["container_id"],
                    running=status.running,
                    exit_code=status.exit_code,
                    labels=record.get("labels", {}),
                )
            )
        return found

    async def remove(self, container_id: str) -> None:
        folder = self._folder(container_id)
        if not folder.exists():
            return
        if self._status(folder).running:
            try:
                await self.signal(container_id, signal.SIGKILL)
                await asyncio.wait_for(self.wait(container_id), timeout=KILL_WAIT_S)
            except UnknownContainer:
                # Another remover (the agent's cleanup, a reattached runtime) saw it running
                # too and finished first, folder and all: what is left below is a no-op.
                pass
        self._reap(container_id)
        await asyncio.to_thread(shutil.rmtree, folder, True)

    # --- logs ----------------------------------------------------------------------------------

    async def logs(
        self, container_id: str, since: float | None = None
    ) -> AsyncIterator[tuple[str, bytes]]:
        folder = self._existing(container_id)
        files = {s: (folder / f"{s}.log").open("rb") for s in STREAMS}
        if since is not None:  # the files keep no times: what is written from now on
            for file in files.values():
                file.seek(0, os.SEEK_END)
        try:
            idle = 0.005
            ended = False
            while True:
                got = False
                for stream, file in files.items():
                    chunk = file.read(LOG_CHUNK)
                    if chunk:
                        got = True
                        yield stream, chunk
                if got:
                    idle = 0.005
                    continue
                if ended:  # one last read after the end was seen has drained the files
                    return
                ended = not self._status(folder).running
                if not ended:
                    await asyncio.sleep(idle)
                    idle = min(idle * 2, 0.1)
        finally:
            for file in files.values():
                file.close()

    async def close(self) -> None:
        for proc in self._children.values():
            proc.poll()

    # --- state ---------------------------------------------------------------------------------

    def _folder(self, container_id: str) -> Path:
        if not is_valid_container_id(container_id):
            raise UnknownContainer(container_id)
        return self._state_dir / container_id

    def _existing(self, container_id: str) -> Path:
        folder = self._folder(container_id)
        if not (folder / RECORD_FILE).exists():
            raise UnknownContainer(container_id)
        return folder

    def _status(self, folder: Path) -> _Status:
        ended = _read_json(folder / supervise.EXIT_FILE)
        if ended is not None:
            return _Status(running=False, exit_code=int(ended["exit_code"]))
        if folder.name in self._starting:
            return _Status(running=True, exit_code=None)
        pids = _read_json(folder / supervise.PIDS_FILE)
        if pids and supervise.is_same_process(pids["supervisor_pid"], pids["supervisor_start"]):
            return _Status(running=True, exit_code=None)
        ended = _read_json(folder / supervise.EXIT_FILE)  # it may have just finished
        code = LOST_EXIT_CODE if ended is None else int(ended["exit_code"])
        return _Status(running=False, exit_code=code)

    def _reap(self, container_id: str) -> None:
        proc = self._children.get(container_id)
        if proc is not None and proc.poll() is not None:
            del self._children[container_id]


def _read_ready(fd: int, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 64)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").strip()


async def _until_gone(pid: int, start_time: int | None) -> None:
    """Returns once the process (pid, start time) has exited; at once if it is not that one."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        fd = None
    if fd is None:  # no pidfd (old kernel) or the process is already gone: poll
        while supervise.is_same_process(pid, start_time):
            await asyncio.sleep(0.05)
        return
    try:
        if not supervise.is_same_process(pid, start_time):
            return
        loop = asyncio.get_running_loop()
        exited = loop.create_future()
        loop.add_reader(fd, lambda: exited.done() or exited.set_result(None))
        try:
            await exited
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)
