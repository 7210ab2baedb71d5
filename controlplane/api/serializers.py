"""Rows to wire models. No queries here: callers pass what the rows need."""

from __future__ import annotations

from typing import Any

from controlplane.api.schemas.experiments import (
    CheckpointWorkload,
    ExperimentOut,
    MetricsBlock,
    MetricsWorkload,
    TrialOut,
    ValidationSummary,
    WorkloadContainer,
)
from controlplane.api.schemas.reports import CheckpointDeletion, CheckpointOut, CheckpointTraining
from controlplane.api.schemas.templates import TemplateOut
from controlplane.api.schemas.users import AgentUserGroup, UserOut
from controlplane.db.models import Experiment, Metric, Template, Trial, User
from controlplane.domain.states import RunState
from controlplane.services.checkpoints import CheckpointView
from controlplane.services.trials import Workload
from controlplane.services.workspaces import Place


def user_out(user: User) -> UserOut:
    return UserOut(
        id=user.id,
        username=user.username,
        admin=user.admin,
        active=user.active,
        display_name=user.display_name,
        modified_at=user.modified_at,
        agent_user_group=(
            None
            if user.agent_uid is None
            else AgentUserGroup(
                agent_uid=user.agent_uid,
                agent_gid=user.agent_gid,
                agent_user=user.agent_user,
                agent_group=user.agent_group,
            )
        ),
    )


def experiment_out(
    exp: Experiment,
    *,
    num_trials: int,
    username: str,
    wire_state: str,
    place: Place | None = None,
) -> ExperimentOut:
    """`wire_state`: services/experiment_states.py (ACTIVE shown as QUEUED…RUNNING)."""
    searcher = exp.config.get("searcher") or {}
    return ExperimentOut(
        workspace_id=place.workspace_id if place else 1,
        workspace_name=place.workspace_name if place else "",
        project_name=place.project_name if place else "",
        id=exp.id,
        name=exp.name,
        description=exp.description,
        labels=list(exp.labels or []),
        notes=exp.notes,
        state=wire_state,
        archived=exp.archived,
        config=exp.config,
        original_config=exp.original_config,
        num_trials=num_trials,
        job_id=exp.job_id,
        project_id=exp.project_id,
        project_owner_id=place.project_owner_id if place else exp.owner_id,
        user_id=exp.owner_id,
        username=username,
        searcher_type=exp.searcher_type,
        searcher_metric=searcher.get("metric"),
        resource_pool=exp.resource_pool,
        start_time=exp.start_time,
        end_time=exp.end_time,
        progress=exp.progress,
        parent_id=exp.parent_id,
        forked_from=exp.parent_id,
        unmanaged=exp.unmanaged,
        external_experiment_id=exp.external_experiment_id,
    )


def _metrics_block(m: Metric) -> MetricsBlock:
    return MetricsBlock(
        avg_metrics=m.metrics.get("avg_metrics") or {},
        batch_metrics=m.metrics.get("batch_metrics"),
    )


def summary_of(m: Metric | None) -> ValidationSummary | None:
    if m is None:
        return None
    return ValidationSummary(
        id=m.id,
        trial_id=m.trial_id,
        total_batches=m.total_batches,
        end_time=m.end_time,
        metrics=_metrics_block(m),
    )


def trial_out(
    t: Trial,
    *,
    latest_validation: Metric | None = None,
    latest_training: Metric | None = None,
    best_validation: Metric | None = None,
) -> TrialOut:
    end = t.end_time
    wall = ((end or t.start_time) - t.start_time).total_seconds() if end else 0.0
    return TrialOut(
        id=t.id,
        experiment_id=t.experiment_id,
        task_id=t.task_id,
        task_ids=[t.task_id],
        state=RunState(t.state).wire,
        hparams=t.hparams,
        restarts=t.restarts,
        start_time=t.start_time,
        end_time=end,
        total_batches_processed=t.total_batches,
        runner_state=t.runner_state,
        searcher_metric_value=t.searcher_metric_value,
        latest_validation=summary_of(latest_validation),
        latest_training=summary_of(latest_training),
        best_validation=summary_of(best_validation),
        wall_clock_time=wall,
    )


def checkpoint_out(v: CheckpointView) -> CheckpointOut:
    c, trial = v.checkpoint, v.trial
    validation = None
    searcher_metric = None
    if v.validation is not None:
        validation = _metrics_block(v.validation).model_dump(by_alias=True)
        metric = ((v.experiment_config or {}).get("searcher") or {}).get("metric")
        value = validation["avgMetrics"].get(metric) if metric else None
        searcher_metric = value if isinstance(value, int | float) else None
    return CheckpointOut(
        uuid=c.uuid,
        task_id=c.task_id,
        allocation_id=c.allocation_id,
        report_time=c.report_time,
        resources=dict(c.resources or {}),
        metadata=dict(c.metadata_ or {}),
        state=f"STATE_{c.state}",
        training=CheckpointTraining(
            trial_id=c.trial_id,
            experiment_id=trial.experiment_id if trial else None,
            experiment_config=v.experiment_config,
            hparams=trial.hparams if trial else None,
            validation_metrics=validation,
            searcher_metric=searcher_metric,
        ),
        storage_id=c.storage_id,
        protected=bool(c.protected),
        deletion=None
        if c.delete_requested_at is None
        else CheckpointDeletion(
            requested_time=c.delete_requested_at,
            attempts=c.delete_attempts or 0,
            error=c.delete_error,
            retry_time=c.delete_retry_at,
            deleted_time=c.deleted_at,
        ),
    )


def workload_out(w: Workload) -> WorkloadContainer:
    if w.checkpoint is not None:
        c = w.checkpoint
        return WorkloadContainer(
            checkpoint=CheckpointWorkload(
                uuid=c.uuid,
                total_batches=c.steps_completed,
                end_time=c.report_time,
                state=f"STATE_{c.state}",
                resources=dict(c.resources or {}),
                metadata=dict(c.metadata_ or {}),
            )
        )
    assert w.metric is not None
    body = MetricsWorkload(
        total_batches=w.total_batches, end_time=w.end_time, metrics=_metrics_block(w.metric)
    )
    return WorkloadContainer(**{w.kind: body})


def template_out(t: Template) -> TemplateOut:
    return TemplateOut(name=t.name, config=t.config, workspace_id=t.workspace_id)


def strip_none(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}
