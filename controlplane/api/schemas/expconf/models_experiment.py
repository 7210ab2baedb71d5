"""The top-level experiment config (reference §5.1) and its small sub-blocks."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from controlplane.domain import limits

from .models_base import BindMount, ConfigModel, Length, config_error, fail_at, type_name
from .models_environment import EnvironmentConfig, ResourcesConfig
from .models_hparams import Hyperparameters, grid_count_errors, grid_size_errors
from .models_integrations import IntegrationsConfig
from .models_searcher import GridSearcher, SearcherConfig
from .models_storage import CheckpointStorageConfig

DEFAULT_PREEMPTION_TIMEOUT = 3600
"""task_container_defaults.preemption_timeout, in seconds."""


class ProfilingConfig(ConfigModel):
    """System-metrics profiling of trials."""

    enabled: bool = Field(default=False, description="Collect profiling metrics.")
    begin_on_batch: int = Field(default=0, ge=0, description="First batch to profile.")
    end_after_batch: int | None = Field(
        default=None, ge=0, description="Last batch to profile (unset: until the end)."
    )
    sync_timings: bool = Field(default=True, description="Synchronise timings with the GPU.")


class ReproducibilityConfig(ConfigModel):
    """Seeds for reproducible searches."""

    experiment_seed: int | None = Field(
        default=None,
        ge=0,
        le=2**32 - 1,
        description="Seed of the searcher's random generator; unset means the creation time.",
    )


class OptimizationsConfig(ConfigModel):
    """Deprecated distributed-training knobs, kept so old configs still validate."""

    aggregation_frequency: int = Field(default=1, ge=1, description="Deprecated.")
    auto_tune_tensor_fusion: bool = Field(default=False, description="Deprecated.")
    average_aggregated_gradients: bool = Field(default=True, description="Deprecated.")
    average_training_metrics: bool = Field(default=False, description="Deprecated.")
    gradient_compression: bool = Field(default=False, description="Deprecated.")
    grad_updates_size_file: str | None = Field(default=None, description="Deprecated.")
    mixed_precision: Literal["O0", "O1", "O2", "O3"] = Field(
        default="O0", description="Deprecated."
    )
    tensor_fusion_threshold: int = Field(default=64, ge=0, description="Deprecated.")
    tensor_fusion_cycle_time: int = Field(default=5, ge=0, description="Deprecated.")


class RetentionPolicyConfig(ConfigModel):
    """How long task logs are kept."""

    log_retention_days: int | None = Field(
        default=None, ge=-1, le=32767, description="Days to keep logs; -1 keeps them forever."
    )


def _entrypoint(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    if isinstance(value, list):
        raise config_error("entrypoint list items must all be strings")
    raise config_error(f"entrypoint must be a string or a list of strings, got {type_name(value)}")


Entrypoint = Annotated[str | list[str], BeforeValidator(_entrypoint)]


def _loose(description: str) -> Any:
    return Field(default=None, description=description)


class ExperimentConfig(ConfigModel):
    """A Determined 0.38.1 experiment config (expconf v0)."""

    name: str | None = Field(
        default=None,
        max_length=limits.NAME_CHARS,
        description='Experiment name; unset: "Experiment (<petname>)", as Determined names it.',
    )
    description: str | None = Field(
        default=None, max_length=limits.DESCRIPTION_CHARS, description="Free-text description."
    )
    labels: list[Annotated[str, Field(max_length=limits.SHORT_NAME_CHARS)]] = Field(
        default_factory=list, max_length=limits.LABELS, description="Labels for filtering."
    )
    project: str = Field(
        default="",
        max_length=limits.SHORT_NAME_CHARS,
        description="Project name (empty: the default).",
    )
    workspace: str = Field(
        default="",
        max_length=limits.SHORT_NAME_CHARS,
        description="Workspace name (empty: the default).",
    )
    entrypoint: Entrypoint | None = Field(
        default=None,
        description="Command: a string runs under `sh -c`, a list runs directly.",
    )
    hyperparameters: Hyperparameters = Field(
        default_factory=dict, description="Hyperparameter definitions by name."
    )
    searcher: SearcherConfig | None = Field(
        default=None, description="Hyperparameter search method (eventually required)."
    )
    resources: ResourcesConfig = Field(
        default_factory=ResourcesConfig, description="Slots, priority and pool."
    )
    environment: EnvironmentConfig = Field(
        default_factory=EnvironmentConfig, description="Container image and settings."
    )
    bind_mounts: list[BindMount] = Field(
        default_factory=list, description="Host directories mounted into containers."
    )
    checkpoint_storage: CheckpointStorageConfig | None = Field(
        default=None, description="Where checkpoints go; unset means the master's default."
    )
    checkpoint_policy: Literal["best", "all", "none"] = Field(
        default="best", description="Which checkpoints the trial takes after validations."
    )
    max_restarts: int = Field(
        default=5, ge=0, le=2**31 - 1, description="Restarts allowed per trial."
    )
    min_validation_period: Length = Field(
        default_factory=lambda: Length(batches=0), description="Deprecated."
    )
    min_checkpoint_period: Length = Field(
        default_factory=lambda: Length(batches=0), description="Deprecated."
    )
    scheduling_unit: int = Field(default=100, ge=1, description="Deprecated.")
    records_per_epoch: int = Field(default=0, ge=0, description="Legacy.")
    perform_initial_validation: bool = Field(
        default=False, description="Validate before any training."
    )
    preemption_timeout: int | None = Field(
        default=None,
        ge=0,
        description="Seconds a preempted trial has to stop; unset means the TCD (3600).",
    )
    profiling: ProfilingConfig = Field(
        default_factory=ProfilingConfig, description="Profiling settings."
    )
    reproducibility: ReproducibilityConfig = Field(
        default_factory=ReproducibilityConfig, description="Seeds."
    )
    data: dict[str, Any] = Field(default_factory=dict, description="Free-form, for user code.")
    debug: bool = Field(default=False, description="Verbose logging in tasks.")
    log_policies: list[dict[str, Any]] = Field(
        default_factory=list, description="Log pattern policies (accepted loosely)."
    )
    retention_policy: RetentionPolicyConfig | None = Field(
        default=None, description="Log retention."
    )
    optimizations: OptimizationsConfig = Field(
        default_factory=OptimizationsConfig, description="Deprecated."
    )
    tensorboard_storage: dict[str, Any] | None = _loose("Legacy; accepted loosely.")
    integrations: IntegrationsConfig | None = Field(
        default=None, description="Webhooks it fires; Pachyderm provenance."
    )
    security: dict[str, Any] | None = _loose("Security settings; accepted loosely.")
    slurm: dict[str, Any] | None = _loose("Slurm (HPC) settings; accepted loosely.")
    pbs: dict[str, Any] | None = _loose("PBS (HPC) settings; accepted loosely.")
    data_layer: dict[str, Any] | None = _loose("Legacy data layer; accepted loosely.")
    internal: dict[str, Any] | None = _loose("Internal settings; accepted loosely.")

    @model_validator(mode="after")
    def _grid_needs_counts(self) -> ExperimentConfig:
        if isinstance(self.searcher, GridSearcher):
            problems = grid_count_errors(self.hyperparameters) or grid_size_errors(
                self.hyperparameters, limits.MAX_GRID_TRIALS
            )
            if problems:
                raise fail_at(problems)
        return self
