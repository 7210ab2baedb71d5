"""Runs on the wire (Determined 0.38's v1FlatRun, SearchRuns and the bulk run actions)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from controlplane.api.schemas.common import Int32, Pagination, Wire

MAX_RUN_IDS = 1000


class SearchRunsRequest(Wire):
    project_id: Int32 | None = None
    offset: int = Field(default=0, ge=0, le=2**31 - 1)
    limit: int = Field(default=0, ge=0, le=1000)
    sort: str | None = Field(default=None, max_length=4096)
    filter: str | None = Field(default=None, max_length=64 * 1024)


class FlatRunExperiment(Wire):
    id: int
    name: str
    description: str
    searcher_type: str
    searcher_metric: str
    resource_pool: str
    progress: float
    is_multitrial: bool
    unmanaged: bool = False
    forked_from: int | None = None
    external_experiment_id: str | None = None


class FlatRun(Wire):
    id: int
    start_time: datetime
    end_time: datetime | None = None
    state: str
    labels: list[str] = []
    checkpoint_size: str = "0"
    checkpoint_count: int
    searcher_metric_value: float | None = None
    external_run_id: str | None = None
    hyperparameters: dict[str, Any] | None = None
    summary_metrics: dict[str, Any] | None = None
    user_id: int | None = None
    duration: int | None = None
    project_id: int
    project_name: str
    workspace_id: int
    workspace_name: str
    parent_archived: bool
    experiment: FlatRunExperiment | None = None
    archived: bool
    metadata: dict[str, Any] | None = None
    local_id: str | None = None


class SearchRunsResponse(Wire):
    runs: list[FlatRun]
    pagination: Pagination


class RunsActionRequest(Wire):
    run_ids: list[Int32] = Field(default_factory=list, max_length=MAX_RUN_IDS)
    project_id: Int32 | None = None
    filter: str | None = Field(default=None, max_length=64 * 1024)


class MoveRunsRequest(Wire):
    run_ids: list[Int32] = Field(default_factory=list, max_length=MAX_RUN_IDS)
    source_project_id: Int32
    destination_project_id: Int32
    filter: str | None = Field(default=None, max_length=64 * 1024)
    skip_multitrial: bool = False


class RunActionResult(Wire):
    error: str
    id: int


class RunsActionResponse(Wire):
    results: list[RunActionResult]
