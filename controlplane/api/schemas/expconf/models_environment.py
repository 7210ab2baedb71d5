"""The `environment` block (reference §5.6) and `resources` (§5.2)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from resource_pools.config import task_python_problem

from .models_base import ConfigModel, Device, config_error, type_name

DEVICE_TYPES = ("cpu", "cuda", "rocm")

DEFAULT_IMAGE = "determinedai/pytorch-ngc-dev:0736b6d"
"""task_container_defaults image for every device type."""


class EnvironmentImage(ConfigModel):
    """Container image per device type. A plain string sets all three; `gpu` means `cuda`."""

    cpu: str | None = Field(default=None, description="Image for CPU-only (zero-slot) tasks.")
    cuda: str | None = Field(default=None, description="Image for NVIDIA GPU tasks.")
    rocm: str | None = Field(default=None, description="Image for AMD ROCm GPU tasks.")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return dict.fromkeys(DEVICE_TYPES, data)
        if isinstance(data, dict):
            if "gpu" in data:
                data = dict(data)
                legacy = data.pop("gpu")
                if data.get("cuda") is None:
                    data["cuda"] = legacy
            return data
        raise config_error(
            f"image must be a string or a mapping of cpu/cuda/rocm images, got {type_name(data)}"
        )


def _check_env_var(entry: str) -> str:
    name, sep, _ = entry.partition("=")
    if not sep or not name:
        raise config_error(f"environment variable {entry!r} must look like NAME=value")
    return entry


EnvVar = Annotated[str, AfterValidator(_check_env_var)]


class EnvironmentVariables(ConfigModel):
    """NAME=value lists per device type. A plain list applies to all; `gpu` means `cuda`."""

    cpu: list[EnvVar] = Field(default_factory=list, description="Variables for CPU tasks.")
    cuda: list[EnvVar] = Field(default_factory=list, description="Variables for CUDA tasks.")
    rocm: list[EnvVar] = Field(default_factory=list, description="Variables for ROCm tasks.")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, list):
            return dict.fromkeys(DEVICE_TYPES, data)
        if isinstance(data, dict):
            if "gpu" in data:
                data = dict(data)
                legacy = data.pop("gpu") or []
                current = data.get("cuda") or []
                if isinstance(legacy, list) and isinstance(current, list):
                    data["cuda"] = [*legacy, *current]
                else:
                    data["cuda"] = legacy if data.get("cuda") is None else data["cuda"]
            return data
        raise config_error(
            "environment_variables must be a list of NAME=value strings or a mapping of "
            f"cpu/cuda/rocm lists, got {type_name(data)}"
        )


class RegistryAuth(ConfigModel):
    """Docker registry credentials used to pull the image."""

    username: str | None = Field(default=None, description="Registry user name.")
    password: str | None = Field(default=None, description="Registry password.")
    auth: str | None = Field(default=None, description="Base64 user:password.")
    email: str | None = Field(default=None, description="E-mail (legacy).")
    serveraddress: str | None = Field(default=None, description="Registry address.")
    identitytoken: str | None = Field(default=None, description="Identity token.")
    registrytoken: str | None = Field(default=None, description="Bearer registry token.")


class ProxyPort(ConfigModel):
    """A port of the task container exposed through the master's proxy."""

    proxy_port: int = Field(ge=1, le=65535, description="Container port to proxy.")
    proxy_tcp: bool = Field(default=False, description="Proxy raw TCP instead of HTTP.")
    unauthenticated: bool = Field(default=False, description="Skip proxy authentication.")
    default_service_id: bool = Field(
        default=False, description="Use the task ID as the proxy service ID."
    )


def _task_python(value: Any) -> Any:
    problem = task_python_problem(value)
    if problem:
        raise config_error(problem)
    return value.strip()


TaskPython = Annotated[str, BeforeValidator(_task_python)]


class EnvironmentConfig(ConfigModel):
    """How the task container is built and started."""

    image: EnvironmentImage | None = Field(
        default=None, description="Image: a string, or {cpu, cuda, rocm}."
    )
    environment_variables: EnvironmentVariables = Field(
        default_factory=EnvironmentVariables,
        description="NAME=value list, or {cpu, cuda, rocm} lists.",
    )
    ports: dict[str, int] = Field(default_factory=dict, description="Named container ports.")
    force_pull_image: bool = Field(default=False, description="Pull even if present locally.")
    registry_auth: RegistryAuth | None = Field(default=None, description="Registry credentials.")
    add_capabilities: list[str] = Field(
        default_factory=list, description="Linux capabilities to add."
    )
    drop_capabilities: list[str] = Field(
        default_factory=list, description="Linux capabilities to drop."
    )
    proxy_ports: list[ProxyPort] = Field(
        default_factory=list, description="Ports exposed through the master proxy."
    )
    pod_spec: dict[str, Any] | None = Field(
        default=None, description="Kubernetes pod spec (accepted, unused by agents)."
    )
    python: TaskPython | None = Field(
        default=None,
        description="Resolute: the task's Python. Process runtime: an interpreter or a "
        "virtualenv folder on the agent's machine (absolute path), or a command name such as "
        "python3.12; docker: the interpreter inside the image. Unset: the pool's "
        "task_container_defaults.python, else the agent's own (docs/runtimes.md).",
    )


_MEMORY_SIZE = re.compile(r"^([0-9]*[.])?[0-9]+ ?(([kmgtpKMGTP]([iI]?[bB])?)|[bB])?$")


def _memory_size(value: Any) -> Any:
    if isinstance(value, bool):
        raise config_error("must be a valid memory size")
    if isinstance(value, int):
        if value < 0:
            raise config_error("must be a valid memory size")
        return value
    if isinstance(value, str) and _MEMORY_SIZE.match(value):
        return value
    raise config_error("must be a valid memory size (bytes, or a string like 4G or 512MiB)")


class ResourcesConfig(ConfigModel):
    """Slots, priority and placement of each trial."""

    slots_per_trial: int = Field(
        default=1,
        ge=0,
        le=2**31 - 1,
        description="Slots (GPUs) per trial; 0 is a CPU-only, zero-slot trial.",
    )
    max_slots: int | None = Field(
        default=None,
        ge=0,
        le=2**31 - 1,
        description="Most slots the experiment uses at once (fair share).",
    )
    weight: float = Field(default=1, ge=0, description="Fair-share weight.")
    priority: int | None = Field(
        default=None,
        ge=1,
        le=99,
        description="1..99, lower is more important; unset means the pool's default_priority.",
    )
    resource_pool: str = Field(
        default="",
        max_length=255,
        description="Pool name; empty means the default compute or aux pool.",
    )
    is_single_node: bool | None = Field(
        default=None, description="Fit all slots of a trial on one agent."
    )
    devices: list[Device] = Field(default_factory=list, description="Extra host devices.")
    shm_size: Annotated[int | str | None, BeforeValidator(_memory_size)] = Field(
        default=None, description="/dev/shm size; unset means the TCD shm_size_bytes."
    )
    native_parallel: bool = Field(default=False, description="Legacy; ignored.")
    agent_label: str | None = Field(default=None, description="Legacy; ignored.")
    # Determined's expconf schema has it (integer or null), so templates shared between
    # commands and experiments hold it; an experiment sizes its trials by slots_per_trial.
    slots: int | None = Field(
        default=None,
        le=2**31 - 1,
        description="A command's key, accepted and ignored (experiments use slots_per_trial).",
    )
