"""The job queue on the wire: v1Job / v1RBACJob, v1QueueControl, GetJobsV2."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from controlplane.api.schemas.common import Int32, Pagination, Wire


class JobState(StrEnum):
    UNSPECIFIED = "STATE_UNSPECIFIED"
    QUEUED = "STATE_QUEUED"
    SCHEDULED = "STATE_SCHEDULED"
    SCHEDULED_BACKFILLED = "STATE_SCHEDULED_BACKFILLED"


class JobType(StrEnum):
    UNSPECIFIED = "TYPE_UNSPECIFIED"
    EXPERIMENT = "TYPE_EXPERIMENT"
    NOTEBOOK = "TYPE_NOTEBOOK"
    TENSORBOARD = "TYPE_TENSORBOARD"
    SHELL = "TYPE_SHELL"
    COMMAND = "TYPE_COMMAND"
    CHECKPOINT_GC = "TYPE_CHECKPOINT_GC"
    EXTERNAL = "TYPE_EXTERNAL"
    GENERIC = "TYPE_GENERIC"


class JobSummary(Wire):
    state: JobState
    jobs_ahead: int = Field(description="-1 where the scheduler has no order (fair share).")


class Job(Wire):
    summary: JobSummary | None = None
    type: JobType
    submission_time: str
    username: str
    user_id: int | None = None
    resource_pool: str
    is_preemptible: bool
    priority: int | None = None
    weight: float | None = None
    entity_id: str
    job_id: str
    requested_slots: int
    allocated_slots: int
    name: str
    progress: float | None = None
    workspace_id: int
    # Resolute additions (ignored by the Determined client): why the job waits, and where.
    wait_reason: str = ""
    queue_position: int = 0
    max_slots: int | None = None


class LimitedJob(Wire):
    """What anyone sees of a job in a workspace they may not view (Determined's
    ObfuscateJob): its place and size in the queue, not its name, owner or entity."""

    summary: JobSummary | None = None
    type: JobType
    resource_pool: str
    is_preemptible: bool
    priority: int | None = None
    weight: float | None = None
    job_id: str
    requested_slots: int
    allocated_slots: int
    progress: float | None = None
    workspace_id: int


class RBACJob(Wire):
    """One of the two, as Determined's oneof: the other is left out of the JSON."""

    full: Job | None = Field(None, exclude_if=lambda v: v is None)
    limited: LimitedJob | None = Field(None, exclude_if=lambda v: v is None)


class GetJobsResponse(Wire):
    jobs: list[Job]
    pagination: Pagination


class QueueStats(Wire):
    queued_count: int = 0
    scheduled_count: int = 0


class PoolQueueStats(Wire):
    resource_pool: str
    stats: QueueStats
    aggregates: list[dict[str, object]] = []


class QueueStatsResponse(Wire):
    results: list[PoolQueueStats]


class GetJobsV2Response(Wire):
    jobs: list[RBACJob]
    pagination: Pagination


class QueueControl(Wire):
    job_id: str = Field(min_length=1, max_length=64)
    priority: Int32 | None = None
    weight: float | None = None
    resource_pool: str | None = Field(None, max_length=255)
    ahead_of: str | None = Field(None, max_length=64)
    behind_of: str | None = Field(None, max_length=64)


class UpdateJobQueueRequest(Wire):
    updates: list[QueueControl] = Field(max_length=1000)
