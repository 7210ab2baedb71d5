"""The one protocol every container runtime implements (docker, process), and what it reports.

The agent daemon speaks only to this protocol; `tests/agent/runtimes/` runs one contract suite
against every implementation. A runtime knows nothing of the master: it starts, watches, signals,
finds again and removes the containers of one agent.

Contract (checked by the suite):
- ``start`` returns once the container is running, or raises ``LaunchFailed`` with a message a
  user can act on (image not found, bad mount, invalid or duplicate container id). An executable
  that does not exist is *not* a launch failure: the container starts and exits with 127 (126
  when it cannot be executed), its log saying why (docker-init's behaviour; the process runtime
  matches it).
- The task sees ``request.run_dir`` (prepared by the agent) and finds it in ``DET_RUN_DIR``;
  its working directory is ``DET_RUN_DIR/workdir``. ``request.pylib`` (the agent's shared
  harness library; ``DET_RUN_DIR/pylib`` when not given) is first on ``PYTHONPATH``. Docker
  mounts the run dir at ``/run/determined`` and a given pylib read-only at
  ``/run/determined/pylib``; the process runtime uses both where they are.
- With ``request.user``, the task runs as that uid and gid with no supplementary groups (docker:
  ``user="uid:gid"``; process: the supervisor stays root, the task does not), owns its run dir
  (mode 0700, so another task user can read neither it nor the task's ``/proc/<pid>/environ``),
  and gets ``HOME`` (its passwd home where it has one, on the process runtime; else the run
  dir's ``home/``) unless its environment sets one.
- ``request.python`` names the task's Python (agent/task_python.py): the process runtime runs
  an argv[0] of ``python``/``python3`` with it and puts its folder first on ``PATH`` (its own
  default when the request names none); docker does the same inside the image.
- ``wait`` returns the exit code (128+N for a signal N) whether or not this runtime object
  started the container (a reattached one too).
- ``stop`` sends SIGTERM, then SIGKILL after ``grace_s``; ``signal`` sends one signal.
- Containers carry labels naming the agent and our container id, so ``find`` lists them again
  after an agent restart, running or exited, and ``remove`` forgets one for good (killing it
  first if it still runs; removing an unknown id does nothing). Exited containers stay until
  removed, so their exit code can be read after an agent restart.
- ``wait``, ``signal``, ``stop`` and ``logs`` raise ``UnknownContainer`` for an id this agent has
  no container for; signalling or stopping an exited container does nothing.
- ``logs`` streams the container's output from its start, as (stream, bytes) chunks, until it
  has exited and all of it was read; binary output and very long lines are passed through,
  never decoded here. With ``since`` (a Unix time), only what it prints from then on: the
  engine's timestamps on docker, the current end of its log files on the process runtime.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from agent.protocol import Device, Mount, TaskUser

LABEL_PREFIX = "ai.determined.container"
RUN_DIR_IN_CONTAINER = "/run/determined"


class LaunchFailed(Exception):
    """The container could not be started; the message says why in the user's terms."""


class UnknownContainer(KeyError):
    """No container with this id exists on this agent."""


@dataclass(frozen=True)
class RunRequest:
    container_id: str
    agent_id: str
    argv: tuple[str, ...]
    run_dir: Path
    image: str = ""
    environment: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    devices: tuple[Device, ...] = ()
    shm_size_bytes: int | None = None
    force_pull: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    pylib: Path | None = None
    # The task's Python as the experiment or the pool names it ("": the runtime's default).
    python: str = ""
    # The Unix user and group to start the task as (the agent is root); None: the agent's own.
    user: TaskUser | None = None


@dataclass(frozen=True)
class Found:
    """A container of this agent found by its labels (after a restart, say)."""

    container_id: str
    running: bool
    exit_code: int | None
    labels: Mapping[str, str] = field(default_factory=dict)


class ContainerRuntime(Protocol):
    name: str

    async def start(self, request: RunRequest) -> None: ...

    async def wait(self, container_id: str) -> int: ...

    async def signal(self, container_id: str, signum: int) -> None: ...

    async def stop(self, container_id: str, grace_s: float) -> None: ...

    async def find(self, agent_id: str) -> list[Found]: ...

    async def remove(self, container_id: str) -> None: ...

    def logs(
        self, container_id: str, since: float | None = None
    ) -> AsyncIterator[tuple[str, bytes]]: ...

    async def close(self) -> None: ...
