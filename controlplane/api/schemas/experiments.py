"""Experiments, trials and workloads on the wire (Determined's v1Experiment, v1Trial, …)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from controlplane.api.schemas.common import (
    Int32,
    JsonConfigOrText,
    Pagination,
    ShortText,
    Wire,
)
from controlplane.domain import limits


class WireFile(Wire):
    """v1File: one entry of a context directory."""

    path: str
    type: int | str = 48
    content: str = ""
    mtime: int | str = 0
    mode: int = 0o644
    uid: int = 0
    gid: int = 0


class CreateExperimentRequest(Wire):
    config: JsonConfigOrText = Field(description="Experiment YAML text (or a JSON object)")
    model_definition: list[dict[str, Any]] | None = Field(
        None, description="The context directory as v1File entries"
    )
    template: str | None = Field(None, max_length=limits.SHORT_NAME_CHARS)
    project_id: int | None = Field(None, ge=0, le=2**31 - 1)
    parent_id: int | None = Field(None, ge=0, le=2**31 - 1)
    activate: bool = True
    validate_only: bool = False
    unmanaged: bool | None = None


class ExperimentOut(Wire):
    id: int
    name: str
    description: str = ""
    labels: list[str] = []
    notes: str = ""
    state: str
    archived: bool
    config: dict[str, Any]
    original_config: str
    num_trials: int
    job_id: str
    project_id: int
    project_owner_id: int
    workspace_id: int = 1
    workspace_name: str = ""
    project_name: str = ""
    user_id: int
    username: str
    display_name: str | None = None
    searcher_type: str
    searcher_metric: str | None = None
    resource_pool: str = ""
    start_time: datetime
    end_time: datetime | None = None
    progress: float | None = None
    parent_id: int | None = None
    forked_from: int | None = None
    checkpoint_size: str = "0"
    checkpoint_count: int = 0
    unmanaged: bool = False
    external_experiment_id: str | None = None


class CreateExperimentResponse(Wire):
    experiment: ExperimentOut | None
    config: dict[str, Any]
    warnings: list[str] = []


class ExperimentResponse(Wire):
    experiment: ExperimentOut
    job_summary: dict[str, Any] | None = None
    config: dict[str, Any] | None = None


class ContinueExperimentResponse(Wire):
    """v1ContinueExperimentResponse: the real client reads `experiment` (a KeyError without)."""

    experiment: ExperimentOut
    warnings: list[str] = []


class ExperimentsResponse(Wire):
    experiments: list[ExperimentOut]
    pagination: Pagination


class ResourcesPatch(Wire):
    priority: Int32 | None = None
    weight: float | None = None
    max_slots: Int32 | None = None


class ContinueExperimentRequest(Wire):
    """v1ContinueExperimentRequest: `overrideConfig` is YAML merged over the experiment's."""

    id: Int32
    override_config: str | None = Field(None, max_length=limits.CONFIG_BYTES)


class PatchExperimentRequest(Wire):
    id: Int32 | None = None
    name: str | None = Field(None, max_length=limits.NAME_CHARS)
    description: str | None = Field(None, max_length=limits.DESCRIPTION_CHARS)
    notes: str | None = Field(None, max_length=limits.NOTES_CHARS)
    labels: list[ShortText] | None = Field(None, max_length=limits.LABELS)
    resources: ResourcesPatch | None = None
    checkpoint_storage: dict[str, Any] | None = None


class MetricsBlock(Wire):
    avg_metrics: dict[str, Any]
    batch_metrics: list[dict[str, Any]] | None = None


class ValidationSummary(Wire):
    id: int | None = None
    trial_id: int
    total_batches: int
    end_time: datetime
    metrics: MetricsBlock
    num_inputs: int = 0


class TrialOut(Wire):
    id: int
    experiment_id: int
    task_id: str
    task_ids: list[str]
    state: str
    hparams: dict[str, Any]
    restarts: int
    start_time: datetime
    end_time: datetime | None = None
    total_batches_processed: int
    runner_state: str = ""
    searcher_metric_value: float | None = None
    best_validation: ValidationSummary | None = None
    latest_validation: ValidationSummary | None = None
    latest_training: ValidationSummary | None = None
    best_checkpoint: dict[str, Any] | None = None
    wall_clock_time: float = 0.0
    total_checkpoint_size: str = "0"
    summary_metrics: dict[str, Any] | None = None


class TrialResponse(Wire):
    trial: TrialOut


class TrialsResponse(Wire):
    trials: list[TrialOut]
    pagination: Pagination


class MetricsWorkload(Wire):
    total_batches: int
    end_time: datetime
    state: str = "STATE_COMPLETED"
    metrics: MetricsBlock
    num_inputs: int = 0


class CheckpointWorkload(Wire):
    uuid: str
    total_batches: int
    end_time: datetime
    state: str
    resources: dict[str, str]
    metadata: dict[str, Any]


class WorkloadContainer(Wire):
    """A protobuf oneof: exactly one of the three keys is present on the wire."""

    training: MetricsWorkload | None = None
    validation: MetricsWorkload | None = None
    checkpoint: CheckpointWorkload | None = None

    @model_serializer(mode="wrap")
    def _only_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class WorkloadsResponse(Wire):
    workloads: list[WorkloadContainer]
    pagination: Pagination


class BestValidationResponse(Wire):
    metric: float


class ModelDefResponse(Wire):
    b64_tgz: str
