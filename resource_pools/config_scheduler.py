"""`scheduler` blocks: the policy a pool uses to order and place tasks."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from resource_pools.config_errors import Problem, raise_config_error, reraise_under
from resource_pools.types import FittingPolicy


class SchedulerType(StrEnum):
    """The `type` of a scheduler block."""

    PRIORITY = "priority"
    FAIR_SHARE = "fair_share"
    ROUND_ROBIN = "round_robin"


DEFAULT_PRIORITY = 42


class _PrioritySettings(BaseModel):
    """The nested `priority:` block, another spelling of the flat priority keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    preemption: bool | None = Field(None, description="See SchedulerConfig.preemption.")
    default_priority: int | None = Field(
        None, ge=1, le=99, description="See SchedulerConfig.default_priority."
    )


class SchedulerConfig(BaseModel):
    """How one pool orders and places tasks (`resource_manager.scheduler` or a pool's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: SchedulerType = Field(
        SchedulerType.PRIORITY,
        description=(
            "Scheduling policy: priority (the default), fair_share (deprecated in Determined, "
            "still supported) or round_robin. Determined parses round_robin and then refuses it "
            "('scheduler not available'); Resolute implements it and accepts it."
        ),
    )
    fitting_policy: FittingPolicy = Field(
        FittingPolicy.BEST,
        description="Agent choice: best packs tasks onto the fullest agent that fits, worst "
        "spreads them onto the emptiest.",
    )
    allow_heterogeneous_fits: bool = Field(
        False,
        description="Let a multi-agent task span agents whose slot counts differ.",
    )
    preemption: bool = Field(
        False,
        description="Priority scheduler only: let more important tasks preempt less important "
        "trials. Written flat next to type (a nested `priority:` block is also read).",
    )
    default_priority: int = Field(
        DEFAULT_PRIORITY,
        ge=1,
        le=99,
        description="Priority scheduler only: priority of tasks that set none; 1 is the most "
        "important, 99 the least.",
    )

    @model_validator(mode="before")
    @classmethod
    def _lift_priority_block(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "priority" not in data:
            return data
        flat = {key: value for key, value in data.items() if key != "priority"}
        block = data["priority"]
        if block is None:
            return flat
        try:
            settings = _PrioritySettings.model_validate(block)
        except ValidationError as exc:
            reraise_under(cls.__name__, ("priority",), exc)
        for key in sorted(settings.model_fields_set):
            if key in flat:
                reason = f"{key} is given both here and next to type; give it once"
                raise_config_error(cls.__name__, (("priority", key), reason, block))
            flat[key] = getattr(settings, key)
        return flat

    @model_validator(mode="after")
    def _priority_settings_need_priority_type(self) -> SchedulerConfig:
        # Only non-default values are refused, so a dumped fair_share config reloads.
        if self.type is SchedulerType.PRIORITY:
            return self
        reason = f"applies only to the priority scheduler, not to {self.type.value}"
        problems: list[Problem] = []
        if self.preemption:
            problems.append((("preemption",), reason, self.preemption))
        if self.default_priority != DEFAULT_PRIORITY:
            problems.append((("default_priority",), reason, self.default_priority))
        if problems:
            raise_config_error(type(self).__name__, *problems)
        return self

    @property
    def is_preemptible(self) -> bool:
        """The job queue's IsPreemptible: fair_share always, priority when preemption is on."""
        if self.type == "fair_share":
            return True
        if self.type is SchedulerType.PRIORITY:
            return self.preemption
        return False
