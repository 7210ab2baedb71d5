"""What running tasks send: metrics, checkpoints, progress, logs (Core API, level 2)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from controlplane.api.schemas.common import INT32_MAX, Int32, Pagination, UtcTimestamp, Wire
from controlplane.domain import limits


class TrialMetricsBody(Wire):
    trial_id: Int32 | None = None
    trial_run_id: int = Field(0, ge=0, le=INT32_MAX)
    steps_completed: int = Field(ge=0, le=INT32_MAX)  # int32 in Determined's TrialMetrics
    report_time: UtcTimestamp | None = None
    metrics: dict[str, Any]


class ReportMetricsRequest(Wire):
    group: str = Field(max_length=128)
    metrics: TrialMetricsBody


class TrainingMetricsRequest(Wire):
    training_metrics: TrialMetricsBody


class ValidationMetricsRequest(Wire):
    validation_metrics: TrialMetricsBody


# The harness sends the reports it queued in one request (a Resolute addition to the wire).
MAX_BATCH_REPORTS = 1000


class ReportMetricsBatchRequest(Wire):
    reports: list[ReportMetricsRequest] = Field(max_length=MAX_BATCH_REPORTS)


class ProgressRequest(Wire):
    progress: float
    is_raw: bool = False


class RunnerMetadataRequest(Wire):
    state: str = Field(max_length=4096)


class EarlyExitRequest(Wire):
    reason: str


class RunPrepareRequest(Wire):
    run_id: int = Field(ge=1, le=2**31 - 1)
    checkpoint_storage: dict[str, Any] | None = None


class RunPrepareResponse(Wire):
    storage_id: int | None = None


class CheckpointTraining(Wire):
    trial_id: Int32 | None = None
    experiment_id: Int32 | None = None
    experiment_config: dict[str, Any] | None = None
    hparams: dict[str, Any] | None = None
    training_metrics: dict[str, Any] | None = None
    validation_metrics: dict[str, Any] | None = None
    searcher_metric: float | None = None


class ReportCheckpointRequest(Wire):
    uuid: str = Field(max_length=64)
    state: str = "STATE_COMPLETED"
    resources: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    training: CheckpointTraining | None = None
    allocation_id: str | None = Field(None, max_length=160)
    task_id: str | None = Field(None, max_length=128)
    report_time: UtcTimestamp | None = None
    storage_id: int | None = Field(None, ge=0, le=2**31 - 1)


class CheckpointDeletion(Wire):
    """Ours (Determined has no such field): where a requested deletion stands."""

    requested_time: datetime
    attempts: int = 0
    error: str | None = None
    retry_time: datetime | None = None
    deleted_time: datetime | None = None


class CheckpointOut(Wire):
    uuid: str
    task_id: str | None = None
    allocation_id: str | None = None
    report_time: datetime
    resources: dict[str, str]
    metadata: dict[str, Any]
    state: str
    training: CheckpointTraining
    storage_id: int | None = None
    protected: bool = False
    deletion: CheckpointDeletion | None = None


class CheckpointResponse(Wire):
    checkpoint: CheckpointOut


class CheckpointsResponse(Wire):
    checkpoints: list[CheckpointOut]
    pagination: Pagination


class CheckpointResources(Wire):
    resources: dict[str, Any] = {}


class PatchCheckpoint(Wire):
    uuid: str = Field(max_length=64)
    resources: CheckpointResources | None = None


class PatchCheckpointsRequest(Wire):
    checkpoints: list[PatchCheckpoint]


class DeleteCheckpointsRequest(Wire):
    checkpoint_uuids: list[str] = Field(max_length=limits.CHECKPOINTS_PER_DELETE)


class RemoveCheckpointFilesRequest(Wire):
    checkpoint_uuids: list[str] = Field(max_length=limits.CHECKPOINTS_PER_DELETE)
    checkpoint_globs: list[str] = Field(default_factory=list, max_length=100)


class CheckpointProtection(Wire):
    protected: bool


class CheckpointGcEntry(Wire):
    uuid: str
    trial_id: int
    steps_completed: int
    searcher_metric: float | None = None
    keep_reasons: list[str] = []


class CheckpointGcPlan(Wire):
    """Ours: what GC of an experiment deletes and keeps (`det experiment gc --dry-run`)."""

    experiment_id: int
    dry_run: bool
    delete: list[CheckpointGcEntry]
    keep: list[CheckpointGcEntry]


class CleanupLogsResponse(Wire):
    removed_count: str


class LogIn(Wire):
    task_id: str = Field(max_length=128)
    log: str
    timestamp: UtcTimestamp | None = None
    allocation_id: str | None = Field(None, max_length=160)
    agent_id: str | None = Field(None, max_length=255)
    container_id: str | None = Field(None, max_length=255)
    rank_id: int | None = Field(None, ge=0, le=2**31 - 1)
    level: str | None = None
    stdtype: str | None = Field(None, max_length=16)
    source: str | None = Field(None, max_length=64)


class PostTaskLogsRequest(Wire):
    logs: list[LogIn]


class PreemptionResponse(Wire):
    preempt: bool


class Empty(Wire):
    pass
