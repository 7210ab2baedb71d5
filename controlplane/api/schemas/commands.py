"""Commands and tasks on the wire: the command config, v1Command, v1Task, v1AllocationSummary.

`CommandConfig` is Determined's CommandConfig (the `config` of `POST /api/v1/commands`, the
same keys `det cmd run --config-file` reads): unknown keys are refused, like expconf.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError

from controlplane.api.schemas.common import Int32, JsonConfigOrText, Pagination, Wire
from controlplane.api.schemas.expconf import (
    BindMount,
    ConfigIssue,
    Device,
    EnvironmentConfig,
    ExperimentConfigError,
)
from controlplane.api.schemas.expconf.models_base import ConfigModel, config_error, type_name
from controlplane.api.schemas.expconf.models_environment import _memory_size
from controlplane.api.schemas.expconf.validate import issues_from_validation_error
from controlplane.domain import limits

DEFAULT_COMMAND_SLOTS = 1


def _entrypoint(value: Any) -> Any:
    if isinstance(value, str):
        if not value.strip():
            raise config_error("entrypoint must not be empty")
        return value
    if isinstance(value, list):
        if not value:
            raise config_error("entrypoint must name a program to run")
        if not all(isinstance(item, str) for item in value):
            raise config_error("entrypoint list items must all be strings")
        return value
    raise config_error(f"entrypoint must be a string or a list of strings, got {type_name(value)}")


class CommandResources(ConfigModel):
    """What a command's one allocation asks the scheduler for."""

    slots: int = Field(
        default=DEFAULT_COMMAND_SLOTS,
        ge=0,
        le=2**31 - 1,
        description="Slots (GPUs) for the command; 0 runs it as zero-slot (aux) work.",
    )
    resource_pool: str = Field(
        default="", max_length=255, description="Pool; empty means the default compute/aux pool."
    )
    priority: int | None = Field(
        default=None, ge=1, le=99, description="1..99, lower is more important."
    )
    weight: float = Field(default=1, ge=0, description="Fair-share weight.")
    max_slots: int | None = Field(default=None, ge=0, description="Unused by commands.")
    is_single_node: bool | None = Field(default=None, description="Fit on one agent.")
    devices: list[Device] = Field(default_factory=list, description="Extra host devices.")
    shm_size: Annotated[int | str | None, BeforeValidator(_memory_size)] = Field(
        default=None, description="/dev/shm size."
    )
    native_parallel: bool = Field(default=False, description="Legacy; ignored.")
    agent_label: str | None = Field(default=None, description="Legacy; ignored.")


class CommandConfig(ConfigModel):
    """`det cmd run` configuration (Determined's CommandConfig)."""

    description: str | None = Field(
        default=None, max_length=limits.DESCRIPTION_CHARS, description="Shown by `det cmd list`."
    )
    entrypoint: Annotated[str | list[str] | None, BeforeValidator(_entrypoint)] = Field(
        default=None, description="The program and its arguments (a string is run by sh -c)."
    )
    environment: EnvironmentConfig = Field(
        default_factory=EnvironmentConfig, description="Image, variables, pull policy."
    )
    resources: CommandResources = Field(
        default_factory=CommandResources, description="Slots, pool, priority."
    )
    bind_mounts: list[BindMount] = Field(default_factory=list, description="Host directories.")
    work_dir: str | None = Field(default=None, description="Working directory in the task.")
    debug: bool = Field(default=False, description="Verbose task start-up.")
    idle_timeout: str | None = Field(default=None, description="Accepted; unused by commands.")
    notebook_idle_type: str | None = Field(default=None, description="Accepted; unused.")
    tensorboard_args: list[str] = Field(default_factory=list, description="Accepted; unused.")
    pbs: dict[str, Any] | None = Field(default=None, description="Accepted; unused by agents.")
    slurm: dict[str, Any] | None = Field(default=None, description="Accepted; unused by agents.")


def validate_command_config(data: Any) -> CommandConfig:
    """Raises `ExperimentConfigError` listing every issue by key path."""
    if not isinstance(data, dict):
        raise ExperimentConfigError(
            ConfigIssue("", f"a command config must be a mapping, got {type_name(data)}")
        )
    try:
        config = CommandConfig.model_validate(data)
    except ValidationError as exc:
        raise ExperimentConfigError(issues_from_validation_error(exc, data, None)) from None
    if config.entrypoint is None:
        raise ExperimentConfigError(
            ConfigIssue(
                "entrypoint", "Field required: give the command to run, e.g. det cmd run ls"
            )
        )
    return config


# --- requests ----------------------------------------------------------------------------------


class LaunchCommandRequest(Wire):
    """The raw dict `det cmd run` posts (snake_case `template_name` and camelCase both work)."""

    config: JsonConfigOrText = Field(description="The command config (CommandConfig).")
    files: list[dict[str, Any]] | None = Field(
        None, description="The context directory: legacy file dicts (int mtime) or v1File."
    )
    template_name: str | None = Field(None, max_length=255, description="Template to merge.")
    workspace_id: int | None = Field(None, ge=0, le=2**31 - 1)
    data: Any = Field(None, description="Accepted and ignored (notebooks use it).")


# --- responses ---------------------------------------------------------------------------------


class TaskState(StrEnum):
    """taskv1State."""

    UNSPECIFIED = "STATE_UNSPECIFIED"
    PULLING = "STATE_PULLING"
    STARTING = "STATE_STARTING"
    RUNNING = "STATE_RUNNING"
    TERMINATED = "STATE_TERMINATED"
    TERMINATING = "STATE_TERMINATING"
    WAITING = "STATE_WAITING"
    QUEUED = "STATE_QUEUED"


class TaskType(StrEnum):
    UNSPECIFIED = "TASK_TYPE_UNSPECIFIED"
    TRIAL = "TASK_TYPE_TRIAL"
    NOTEBOOK = "TASK_TYPE_NOTEBOOK"
    SHELL = "TASK_TYPE_SHELL"
    COMMAND = "TASK_TYPE_COMMAND"
    TENSORBOARD = "TASK_TYPE_TENSORBOARD"
    CHECKPOINT_GC = "TASK_TYPE_CHECKPOINT_GC"
    GENERIC = "TASK_TYPE_GENERIC"


class Command(Wire):
    """v1Command."""

    id: str
    description: str
    state: TaskState
    start_time: str
    end_time: str | None = None
    username: str
    user_id: int
    display_name: str = ""
    resource_pool: str
    exit_status: str = ""
    job_id: str
    workspace_id: int
    # Resolute additions (ignored by the Determined client): the entrypoint's exit code and
    # the command's own argv, so our CLI can exit with the command's outcome.
    exit_code: int | None = None
    entrypoint: list[str] = Field(default_factory=list)


class LaunchCommandResponse(Wire):
    command: Command
    config: dict[str, Any]
    warnings: list[str] = Field(default_factory=list)


class GetCommandResponse(Wire):
    command: Command
    config: dict[str, Any]


class GetCommandsResponse(Wire):
    commands: list[Command]
    pagination: Pagination


class KillCommandResponse(Wire):
    command: Command


class SetPriorityRequest(Wire):
    """v1Set{Command,Notebook,Shell,Tensorboard}PriorityRequest: the id travels in the path."""

    priority: Int32 = Field(description="The job's new priority (1 to 99; lower runs first).")


class SetCommandPriorityResponse(Wire):
    command: Command


class TaskAllocation(Wire):
    """v1Allocation."""

    task_id: str
    allocation_id: str
    state: TaskState
    is_ready: bool = False
    start_time: str | None = None
    end_time: str | None = None
    exit_reason: str | None = None
    slots: Int32


class Task(Wire):
    """v1Task."""

    task_id: str
    task_type: TaskType
    allocations: list[TaskAllocation]
    start_time: str
    end_time: str | None = None
    # Generic tasks only (api/generic_tasks.py): v1GenericTaskState, the config as JSON text.
    task_state: str | None = None
    config: str | None = None
    forked_from: str | None = None
    parent_id: str | None = None
    no_pause: bool | None = None


class GetTaskResponse(Wire):
    task: Task


class WireDevice(Wire):
    id: int
    brand: str = ""
    uuid: str = ""
    type: str = "TYPE_UNSPECIFIED"


class AgentDevices(Wire):
    devices: list[WireDevice]


class ResourcesSummary(Wire):
    """v1ResourcesSummary: one container of an allocation."""

    resources_id: str
    resources_type: str = "docker-container"
    allocation_id: str
    agent_devices: dict[str, AgentDevices]
    container_id: str


class ProxyPortConfig(Wire):
    service_id: str = ""
    port: int
    proxy_tcp: bool = False
    unauthenticated: bool = False


class AllocationSummary(Wire):
    """v1AllocationSummary: a live allocation, as `det task list` and `det slot list` show it."""

    task_id: str
    allocation_id: str
    name: str
    registered_time: str
    resource_pool: str
    slots_needed: int
    resources: list[ResourcesSummary]
    scheduler_type: str
    priority: int | None = None
    proxy_ports: list[ProxyPortConfig] = Field(default_factory=list)
    # Resolute additions: the task's type and the allocation's container state.
    task_type: TaskType = TaskType.UNSPECIFIED
    state: TaskState = TaskState.UNSPECIFIED


class GetTasksResponse(Wire):
    allocation_id_to_summary: dict[str, AllocationSummary]
