"""Resource-management part of the master config: resource_manager and resource_pools.

Follows Determined 0.38's code where its docs disagree. Resolute differs in two places:
round_robin is a working scheduler, and a number given for a duration means seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from resource_pools.config_duration import GoDuration, format_go_duration, parse_go_duration
from resource_pools.config_errors import Problem, format_config_errors, raise_config_error
from resource_pools.config_scheduler import SchedulerConfig, SchedulerType
from resource_pools.types import FittingPolicy

__all__ = [
    "DEFAULT_POOL_NAME",
    "FittingPolicy",
    "GoDuration",
    "ResourceManagerConfig",
    "ResourcePoolConfig",
    "ResourcesConfig",
    "SchedulerConfig",
    "SchedulerType",
    "format_config_errors",
    "format_go_duration",
    "parse_go_duration",
    "task_python_problem",
]

DEFAULT_POOL_NAME = "default"
_DEFAULT_POOL_KEYS = ("default_aux_resource_pool", "default_compute_resource_pool")
_LEGACY_KEYS = ("scheduler", "provisioner")
_MODERN_KEYS = ("resource_manager", "resource_pools")
_BOOL = TypeAdapter(bool)


def _move_deprecated(data: dict[str, Any], old: str, new: str, title: str) -> dict[str, Any]:
    """Map a deprecated key onto its replacement; giving both with different values fails."""
    if old not in data:
        return data
    data = dict(data)
    value = data.pop(old)
    if new in data and data[new] != value:
        raise_config_error(
            title, ((old,), f"deprecated {old} conflicts with {new}; keep only {new}", value)
        )
    data[new] = value
    return data


def _drop_nulls(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Treat `key: null` (an empty YAML entry) as an omitted key, so the default applies."""
    return {k: v for k, v in data.items() if not (k in keys and v is None)}


class ResourceManagerConfig(BaseModel):
    """`resource_manager`: cluster-wide settings of the agent resource manager."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["agent"] = Field(
        "agent", description="Resource manager kind; only agent (Resolute's own agents) exists."
    )
    cluster_name: str = Field(
        "default",
        description="Name of the cluster. The deprecated `name` is used when this is empty.",
    )
    scheduler: SchedulerConfig = Field(
        default_factory=SchedulerConfig,
        description="Scheduler of every pool that has no scheduler block of its own.",
    )
    default_aux_resource_pool: str = Field(
        DEFAULT_POOL_NAME,
        description="Pool for zero-slot tasks that name none (deprecated: "
        "default_cpu_resource_pool). Empty when no_default_resource_pools is set.",
    )
    default_compute_resource_pool: str = Field(
        DEFAULT_POOL_NAME,
        description="Pool for slotted tasks that name none (deprecated: "
        "default_gpu_resource_pool). Empty when no_default_resource_pools is set.",
    )
    no_default_resource_pools: bool = Field(
        False,
        description="Every task must name its pool; both default pools must then be empty.",
    )
    require_authentication: bool = Field(
        False, description="Agents must present a client certificate signed by client_ca."
    )
    client_ca: str = Field("", description="Path of the CA certificate that signs agent certs.")
    metadata: dict[str, str] = Field(
        default_factory=dict, description="Free-form labels reported with the cluster."
    )

    @model_validator(mode="before")
    @classmethod
    def _map_deprecated_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = _drop_nulls(data, ("scheduler",))
        data = _move_deprecated(
            data, "default_cpu_resource_pool", "default_aux_resource_pool", cls.__name__
        )
        data = _move_deprecated(
            data, "default_gpu_resource_pool", "default_compute_resource_pool", cls.__name__
        )
        data = _adopt_deprecated_name(data)
        if _is_true(data.get("no_default_resource_pools")):
            data.setdefault("default_aux_resource_pool", "")
            data.setdefault("default_compute_resource_pool", "")
        return data

    @field_validator("type", mode="before")
    @classmethod
    def _only_agent(cls, value: Any) -> Any:
        if value != "agent":
            raise ValueError(
                f"resource manager type {value!r} is not supported; Resolute has only 'agent'"
            )
        return value

    @model_validator(mode="after")
    def _default_pools_match_flag(self) -> ResourceManagerConfig:
        keys = _DEFAULT_POOL_KEYS
        if self.no_default_resource_pools:
            reason = "must be empty when no_default_resource_pools is true"
            bad = [((k,), reason, getattr(self, k)) for k in keys if getattr(self, k)]
        else:
            reason = "must name a pool unless no_default_resource_pools is true"
            bad = [((k,), reason, getattr(self, k)) for k in keys if not getattr(self, k)]
        if bad:
            raise_config_error(type(self).__name__, *bad)
        return self


def _adopt_deprecated_name(data: dict[str, Any]) -> dict[str, Any]:
    """Determined uses the deprecated `name` only when cluster_name is missing or empty."""
    if "name" not in data:
        return data
    data = dict(data)
    name = data.pop("name")
    if not data.get("cluster_name"):
        data["cluster_name"] = name
    return data


def task_python_problem(value: Any) -> str | None:
    """Why ``value`` cannot name a task's Python (``task_container_defaults.python``, the
    experiment's ``environment.python``); None when it can.

    A task's Python is an absolute path (an interpreter, or a virtualenv folder on the process
    runtime; read on the agent's machine, or inside the image on docker) or a command name
    without '/', such as python3.12. Whether it exists is only known where the task runs.
    """
    if not isinstance(value, str):
        kind = {bool: "boolean", int: "integer", float: "number", list: "list", dict: "mapping"}
        return (
            "must be a string: the absolute path of a Python interpreter or virtualenv, or a "
            f"command name such as python3.12; got {kind.get(type(value), type(value).__name__)}"
        )
    if not value.strip():
        return "must not be empty (leave the key out to use the default)"
    if any(c in value for c in "\0\n\r"):
        return "must be one line without NUL characters"
    if "/" in value and not value.strip().startswith("/"):
        return (
            f"{value!r} is a relative path; give an absolute path (it is read where the task "
            "runs) or a command name without '/', such as python3.12"
        )
    return None


def _tcd_python_problems(tcd: Mapping[str, Any] | None, where: tuple[str, ...]) -> list[Problem]:
    if not tcd or "python" not in tcd or tcd["python"] is None:
        return []
    reason = task_python_problem(tcd["python"])
    return [((*where, "python"), reason, tcd["python"])] if reason else []


def _is_true(value: Any) -> bool:
    try:
        return _BOOL.validate_python(value)
    except ValidationError:
        return False  # the field's own validation reports it


class ResourcePoolConfig(BaseModel):
    """One entry of `resource_pools`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pool_name: str = Field(description="Unique, non-empty name that tasks and agents refer to.")
    description: str = Field("", description="Free text shown in the pool list.")
    provider: dict[str, Any] | None = Field(
        None,
        description="Dynamic agents (aws or gcp); null for a static pool of hand-started agents.",
    )
    scheduler: SchedulerConfig | None = Field(
        None,
        description="Pool scheduler. All or nothing: null inherits resource_manager.scheduler "
        "whole; any block uses only its own fields, with built-in defaults for the rest.",
    )
    max_aux_containers_per_agent: int = Field(
        100,
        ge=0,
        description="Most zero-slot containers on one agent (deprecated: "
        "max_cpu_containers_per_agent).",
    )
    agent_reconnect_wait: GoDuration = Field(
        timedelta(seconds=25),
        description="How long a disconnected agent may take to come back before its tasks are "
        "failed: a Go duration ('25s', '1m30s') or a number of seconds.",
    )
    agent_reattach_enabled: bool | None = Field(
        None, description="Accepted for compatibility and ignored: reattaching is always on."
    )
    task_container_defaults: dict[str, Any] | None = Field(
        None,
        description="Merged over the top-level task_container_defaults for this pool's tasks. "
        "Resolute adds `python`: the pool's default task Python (docs/runtimes.md).",
    )
    kubernetes_namespace: str | None = Field(
        None, description="Accepted for compatibility; only Determined's kubernetes RM uses it."
    )

    @model_validator(mode="before")
    @classmethod
    def _map_deprecated_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return _move_deprecated(
            data, "max_cpu_containers_per_agent", "max_aux_containers_per_agent", cls.__name__
        )

    @field_validator("pool_name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("pool_name must not be empty")
        return value

    @model_validator(mode="after")
    def _check_task_python(self) -> ResourcePoolConfig:
        problems = _tcd_python_problems(self.task_container_defaults, ("task_container_defaults",))
        if problems:
            raise_config_error(type(self).__name__, *problems)
        return self


def _default_pools() -> tuple[ResourcePoolConfig, ...]:
    return (ResourcePoolConfig(pool_name=DEFAULT_POOL_NAME),)


class ResourcesConfig(BaseModel):
    """The resource-management keys of the master config, validated as a whole."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    resource_manager: ResourceManagerConfig = Field(
        default_factory=ResourceManagerConfig,
        description="Cluster-wide resource manager settings.",
    )
    resource_pools: tuple[ResourcePoolConfig, ...] = Field(
        default_factory=_default_pools,
        description="The pools; omitted means one static pool named 'default'.",
    )

    @model_validator(mode="before")
    @classmethod
    def _nulls_mean_defaults(cls, data: Any) -> Any:
        return _drop_nulls(data, _MODERN_KEYS) if isinstance(data, dict) else data

    task_container_defaults: dict[str, Any] | None = Field(
        None,
        description="The master's top-level task_container_defaults, for what pools inherit "
        "from it (the default task Python, `python`).",
    )

    @model_validator(mode="after")
    def _check_pool_references(self) -> ResourcesConfig:
        problems = [
            *self._duplicate_names(),
            *self._missing_default_pools(),
            *_tcd_python_problems(self.task_container_defaults, ("task_container_defaults",)),
        ]
        if problems:
            raise_config_error(type(self).__name__, *problems)
        return self

    def _duplicate_names(self) -> list[Problem]:
        first_index: dict[str, int] = {}
        problems: list[Problem] = []
        for index, pool in enumerate(self.resource_pools):
            if pool.pool_name in first_index:
                first = first_index[pool.pool_name]
                reason = f"pool name {pool.pool_name!r} is already used by resource_pools[{first}]"
                problems.append((("resource_pools", index, "pool_name"), reason, pool.pool_name))
            first_index.setdefault(pool.pool_name, index)
        return problems

    def _missing_default_pools(self) -> list[Problem]:
        rm = self.resource_manager
        if rm.no_default_resource_pools:
            return []
        names = {pool.pool_name for pool in self.resource_pools}
        known = ", ".join(sorted(names)) or "none"
        problems: list[Problem] = []
        for key in _DEFAULT_POOL_KEYS:
            value = getattr(rm, key)
            if value not in names:
                reason = f"pool {value!r} is not in resource_pools (defined: {known})"
                problems.append((("resource_manager", key), reason, value))
        return problems

    @classmethod
    def from_master_config(cls, data: Mapping[str, Any]) -> ResourcesConfig:
        """Read the resource keys of a master config, in the current or the pre-0.14 format.

        The pre-0.14 format has top-level `scheduler` and `provisioner`; it becomes one pool
        named 'default' with that provisioner as its provider and that scheduler as the RM's.
        Other master keys (port, db, ...) are ignored here: the master settings own them.
        Raises ValidationError, also for a config that mixes both formats.
        """
        legacy = [key for key in _LEGACY_KEYS if data.get(key) is not None]
        modern = [key for key in _MODERN_KEYS if data.get(key) is not None]
        if legacy and modern:
            reason = (
                f"the pre-0.14 key {legacy[0]!r} cannot be combined with {modern[0]!r}; move "
                "scheduler to resource_manager.scheduler and provisioner to a pool's provider"
            )
            raise_config_error(cls.__name__, ((legacy[0],), reason, data[legacy[0]]))
        defaults = {"task_container_defaults": data.get("task_container_defaults")}
        if legacy:
            return cls._from_legacy(data, defaults)
        modern = {key: data[key] for key in _MODERN_KEYS if key in data}
        return cls.model_validate({**modern, **defaults})

    @classmethod
    def _from_legacy(cls, data: Mapping[str, Any], defaults: dict[str, Any]) -> ResourcesConfig:
        old = _LegacyResourcesConfig.model_validate({k: data.get(k) for k in _LEGACY_KEYS})
        rm = ResourceManagerConfig(scheduler=old.scheduler or SchedulerConfig())
        pool = ResourcePoolConfig(pool_name=DEFAULT_POOL_NAME, provider=old.provisioner)
        return cls.model_validate({"resource_manager": rm, "resource_pools": (pool,), **defaults})

    def task_python(self, pool: str) -> str:
        """The pool's default task Python: its own task_container_defaults.python, else the
        top-level one (a pool's block is merged over the top level); "" when neither sets it."""
        for tcd in (self.pool(pool).task_container_defaults, self.task_container_defaults):
            value = (tcd or {}).get("python")
            if value:
                return str(value).strip()
        return ""

    def pool(self, name: str) -> ResourcePoolConfig:
        """The pool called `name`; KeyError when there is none."""
        for pool in self.resource_pools:
            if pool.pool_name == name:
                return pool
        raise KeyError(name)

    def effective_scheduler(self, pool: ResourcePoolConfig | str) -> SchedulerConfig:
        """The scheduler a pool runs (all or nothing): its own block if it has one, else the RM's.

        A pool block is never merged with the RM's: its missing fields are built-in defaults.
        """
        if isinstance(pool, str):
            pool = self.pool(pool)
        return pool.scheduler if pool.scheduler is not None else self.resource_manager.scheduler

    def deprecation_notes(self) -> list[str]:
        """Messages the master should log at start-up (fair_share is deprecated in Determined)."""
        notes: list[str] = []
        if self.resource_manager.scheduler.type is SchedulerType.FAIR_SHARE:
            notes.append("resource_manager.scheduler: the fair_share scheduler is deprecated")
        for index, pool in enumerate(self.resource_pools):
            if pool.scheduler is not None and pool.scheduler.type is SchedulerType.FAIR_SHARE:
                notes.append(
                    f"resource_pools[{index}] ({pool.pool_name}).scheduler: "
                    "the fair_share scheduler is deprecated"
                )
        return notes


class _LegacyResourcesConfig(BaseModel):
    """Determined's pre-0.14 top-level keys, validated so errors name the keys as written."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="ResourcesConfig")

    scheduler: SchedulerConfig | None = Field(None, description="The cluster's scheduler.")
    provisioner: dict[str, Any] | None = Field(
        None, description="The provider of the single 'default' pool."
    )
