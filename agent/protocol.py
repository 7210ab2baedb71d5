"""The master ↔ agent wire protocol: JSON messages over one WebSocket the agent dials.

The agent connects to ``GET /agents?id=&version=&resource_pool=&reconnect=&hostname=``. Every
frame is one JSON object with exactly one member, named for the message it carries (Determined
sends a union with one non-null member; this is the same shape). The master speaks first
(``MasterSetAgentOptions``), the agent answers ``AgentStarted``; only then may work be placed.

This module is shared by the master and the agent, so it imports nothing else of ours.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

PROTOCOL_VERSION = "1"
AGENTS_PATH = "/agents"
MAX_MESSAGE_BYTES = 128 * 1024 * 1024
AGENT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,254}$"
AgentId = Annotated[str, Field(pattern=AGENT_ID_PATTERN)]
# A container's output line (longer ones are cut, as the launcher's shipper cuts them) and how
# many go in one ContainerOutput.
MAX_OUTPUT_LINE_CHARS = 64 * 1024
MAX_OUTPUT_BATCH = 1000


class ProtocolError(ValueError):
    """A frame that is not valid JSON, names no known message, or fails validation."""


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class DeviceType(StrEnum):
    CUDA = "cuda"
    ROCM = "rocm"
    CPU = "cpu"


class Device(Message):
    """One slot. ``id`` is unique on its agent; ``uuid`` is stable across agent restarts."""

    id: int = Field(ge=0)
    brand: str = ""
    uuid: str = ""
    type: DeviceType = DeviceType.CPU


class ContainerState(StrEnum):
    """Container states only move forward; any state may jump to TERMINATED."""

    ASSIGNED = "ASSIGNED"
    PULLING = "PULLING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    TERMINATED = "TERMINATED"


class FailureType(StrEnum):
    CONTAINER_FAILED = "container failed with non-zero exit code"
    CONTAINER_ABORTED = "container aborted"
    UNKNOWN_CONTAINER = "unknown container"
    TASK_ABORTED = "task aborted"
    TASK_ERROR = "task error"
    AGENT_FAILED = "agent failed while container was running"
    RESTORE_ERROR = "container failed to restore"
    LAUNCH_ERROR = "agent failed to launch the container"


class ContainerFailure(Message):
    type: FailureType
    message: str = ""
    exit_code: int | None = None
    # The container ended while no agent process watched it: the agent that reports it started
    # after it had died (the agent before it was killed, or its machine restarted). The master
    # does not charge a restart for a SIGKILL or SIGTERM found this way (it died with its agent).
    agent_restarted: bool = False


class Container(Message):
    id: str = Field(min_length=1, max_length=200)
    state: ContainerState
    devices: tuple[Device, ...] = ()


class MasterInfo(Message):
    version: str
    master_id: str
    cluster_id: str
    cluster_name: str


class Mount(Message):
    """A host path made visible to the task (docker: a bind mount; process: left in place)."""

    host_path: str
    container_path: str
    read_only: bool = False


class TaskUser(Message):
    """The Unix user and group a task runs as (its owner's linked agent user, or the cluster's
    default for unlinked users; controlplane/domain/task_user.py). An agent running as root
    starts the task as them; one that cannot switch users runs the tasks of one task user at a
    time (docs/agent.md)."""

    uid: int = Field(ge=0, le=2**32 - 2)
    gid: int = Field(ge=0, le=2**32 - 2)
    user: str = Field(default="", max_length=255)
    group: str = Field(default="", max_length=255)
    # The Determined user who owns the task (for the agent's messages).
    owner: str = Field(default="", max_length=255)

    @property
    def key(self) -> str:
        return f"{self.uid}:{self.gid}"


class TaskSpec(Message):
    """What the agent needs to start one container of an allocation.

    ``argv`` is what runs inside the container *after* the harness launcher has prepared it
    (the launcher downloads the context directory, ships logs and forwards signals; see
    docs/agent.md). The agent adds its own ``DET_*`` variables (master address, agent id, slot
    ids, run dir) to ``environment``, and writes ``files`` (paths relative to the task's run
    directory) before the container starts.
    """

    allocation_id: str
    task_id: str
    task_type: str
    rank: int = 0
    num_agents: int = 1
    slots: int = 0
    image: str = ""
    force_pull: bool = False
    argv: tuple[str, ...] = ()
    environment: dict[str, str] = Field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    shm_size_bytes: int | None = Field(default=None, ge=0)
    files: dict[str, str] = Field(default_factory=dict)
    payload: dict[str, Any] = Field(default_factory=dict)
    # The task's Python as the experiment or command names it (``environment.python``); empty
    # leaves it to the pool and the agent (agent/task_python.py).
    python: str = ""
    # Who the task runs as; None from a master that does not say (the agent's own user).
    user: TaskUser | None = None


# --- master → agent -------------------------------------------------------------------------


class MasterSetAgentOptions(Message):
    master_info: MasterInfo
    containers_to_reattach: tuple[Container, ...] = ()
    # The agent sends a Heartbeat at least this often; the master drops a connection that has
    # been silent for ``liveness_timeout_s`` (an agent that stops answering is lost in time).
    heartbeat_interval_s: float = Field(default=5.0, gt=0)
    liveness_timeout_s: float = Field(default=20.0, gt=0)
    # The agent's pool's default task Python (its task_container_defaults.python); empty: none.
    task_python: str = ""


class StartContainer(Message):
    container: Container
    spec: TaskSpec


class SignalContainer(Message):
    container_id: str
    signal: str = "SIGKILL"


class OutputStored(Message):
    """The master has stored a container's ContainerOutput batches up to ``seq``."""

    container_id: str
    seq: int = Field(ge=0)


class AgentShutdown(Message):
    error: str


# --- agent → master -------------------------------------------------------------------------


class ContainerReattached(Message):
    container: Container
    failure: ContainerFailure | None = None


class AgentStarted(Message):
    version: str
    devices: tuple[Device, ...] = Field(default=(), max_length=4096)
    containers_reattached: tuple[ContainerReattached, ...] = ()
    addresses: tuple[str, ...] = ()


class ContainerStateChanged(Message):
    container: Container
    allocation_id: str = ""
    addresses: tuple[str, ...] = ()
    exit_code: int | None = None
    failure: ContainerFailure | None = None


class Heartbeat(Message):
    """Sent by the agent every ``heartbeat_interval_s``; any frame counts as a sign of life."""


class ContainerLog(Message):
    """A line the agent itself has to say about a container (pull, start failure, exit).

    The task's own output is shipped by the harness launcher inside the container, in batches,
    to ``POST /api/v1/task/logs``; the agent only reports what happens around it.
    """

    container_id: str
    timestamp: float
    stream: str = "stdout"
    level: str = "INFO"
    message: str = Field(max_length=64 * 1024)


class OutputLine(Message):
    """One line a container printed (without its newline), as its runtime kept it."""

    timestamp: float
    stream: str = Field(default="stdout", pattern="^(stdout|stderr)$")
    text: str = Field(max_length=MAX_OUTPUT_LINE_CHARS)


class ContainerOutput(Message):
    """The output of a container that runs its command directly, without the harness launcher
    (a command without a context directory; see agent/task_output.py): the agent reads it from
    the runtime and sends it in batches, in order, before the container's TERMINATED report.
    The master stores the lines as the task's logs, reading Determined's ``[rank=N]`` and
    ``LEVEL:`` prefixes as the launcher's shipper does, and answers ``OutputStored``: until then
    the agent keeps the batch and sends it again after a reconnect (a master killed before it
    stored a batch loses nothing; one killed after storing it, before answering, stores it
    twice, as the launcher's retried POST does)."""

    container_id: str
    seq: int = Field(default=0, ge=0)  # per container, from 1
    lines: tuple[OutputLine, ...] = Field(min_length=1, max_length=MAX_OUTPUT_BATCH)


class InterruptionNotice(Message):
    """The cloud is about to take this machine away (an AWS spot interruption, a GCE preemption).

    ``action`` is the cloud's word for it (AWS: terminate, stop or hibernate; GCE: preempt);
    ``deadline`` is when it happens, where the cloud says (AWS does; GCE gives 30 s from its
    notice). The master drains the agent and preempts its allocations at once. The agent sends it
    again after every handshake until it goes away, so a restarted master learns it too.
    """

    cloud: str = ""
    action: str = "terminate"
    deadline: datetime | None = None


TO_AGENT: dict[str, type[Message]] = {
    cls.__name__: cls
    for cls in (MasterSetAgentOptions, StartContainer, SignalContainer, OutputStored, AgentShutdown)
}
TO_MASTER: dict[str, type[Message]] = {
    cls.__name__: cls
    for cls in (
        AgentStarted,
        ContainerStateChanged,
        ContainerLog,
        ContainerOutput,
        Heartbeat,
        InterruptionNotice,
    )
}


def encode(message: Message) -> str:
    """One frame: ``{"<MessageName>": {...}}``."""
    return json.dumps({type(message).__name__: message.model_dump(mode="json")})


def _decode(text: str | bytes, known: dict[str, type[Message]]) -> Message:
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"frame is not JSON: {exc}") from exc
    if not isinstance(data, dict) or len(data) != 1:
        raise ProtocolError("a frame must be an object with exactly one member")
    ((name, body),) = data.items()
    cls = known.get(name)
    if cls is None:
        raise ProtocolError(f"unknown message {name!r}; expected one of {sorted(known)}")
    try:
        return cls.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or name
        raise ProtocolError(f"invalid {name}: {where}: {first['msg']}") from exc


def decode_to_master(text: str | bytes) -> Message:
    """Parse a frame an agent sent; raises ProtocolError."""
    return _decode(text, TO_MASTER)


def decode_to_agent(text: str | bytes) -> Message:
    """Parse a frame the master sent; raises ProtocolError."""
    return _decode(text, TO_AGENT)
