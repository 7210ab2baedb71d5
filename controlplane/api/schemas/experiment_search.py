"""Wire shapes of the experiment search, the project's columns and the bulk actions
(Determined's v1SearchExperiments*, v1GetProjectColumnsResponse, v1*ExperimentsRequest and
v1ExperimentActionResult)."""

from __future__ import annotations

from pydantic import Field

from controlplane.api.schemas.common import Int32, Pagination, ShortText, Wire
from controlplane.api.schemas.experiments import ExperimentOut, TrialOut
from controlplane.domain import limits


class SearchExperimentsRequest(Wire):
    project_id: Int32 | None = None
    offset: int = Field(default=0, ge=0, le=2**31 - 1)
    limit: int = Field(default=100, ge=0, le=limits.SEARCH_PAGE)
    sort: str | None = Field(default=None, max_length=4096)
    filter: str | None = Field(default=None, max_length=64 * 1024)


class SearchExperimentExperiment(Wire):
    experiment: ExperimentOut
    best_trial: TrialOut | None = None


class SearchExperimentsResponse(Wire):
    experiments: list[SearchExperimentExperiment]
    pagination: Pagination


class ProjectColumn(Wire):
    column: str
    location: str
    type: str
    display_name: str | None = None


class ProjectColumnsResponse(Wire):
    columns: list[ProjectColumn]


class BulkExperimentFilters(Wire):
    description: str | None = Field(default=None, max_length=limits.DESCRIPTION_CHARS)
    name: str | None = Field(default=None, max_length=limits.NAME_CHARS)
    labels: list[ShortText] | None = Field(default=None, max_length=limits.LABELS)
    archived: bool | None = None
    states: list[ShortText] | None = Field(default=None, max_length=20)
    user_ids: list[Int32] | None = Field(default=None, max_length=1000)
    project_id: Int32 | None = None
    excluded_experiment_ids: list[Int32] | None = Field(
        default=None, max_length=limits.BULK_EXPERIMENTS
    )


class BulkExperimentsRequest(Wire):
    """archive, unarchive, pause, activate, kill, cancel; move adds destinationProjectId.

    `searchFilter` (Resolute's extension) is the experiment search's filter JSON: the web UI's
    "select all matching" acts on exactly what the list shows, less `excludedExperimentIds`."""

    experiment_ids: list[Int32] = Field(default_factory=list, max_length=limits.BULK_EXPERIMENTS)
    project_id: Int32 | None = None
    filters: BulkExperimentFilters | None = None
    search_filter: str | None = Field(default=None, max_length=64 * 1024)
    destination_project_id: Int32 | None = None


class RetainLogsRequest(BulkExperimentsRequest):
    """Determined's PutExperimentsRetainLogs: the bulk request plus the days (-1: forever)."""

    num_days: int = Field(ge=-1, le=32767)


class ExperimentActionResult(Wire):
    error: str
    id: int


class BulkExperimentsResponse(Wire):
    results: list[ExperimentActionResult]
