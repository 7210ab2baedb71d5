"""How long a trial's logs are kept (`det e|t set log-retention`, Determined's retain_logs
endpoints) and how many days they have left (the web UI's trial page)."""

from __future__ import annotations

from litestar import get, put
from litestar.params import JSONBody

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.log_retention import (
    RemainingDays,
    RetainExperimentLogs,
    RetainTrialLogs,
)
from controlplane.api.schemas.reports import Empty
from controlplane.db.models import Task
from controlplane.domain import log_retention as rules
from controlplane.domain.errors import InvalidArgument
from controlplane.services import experiments, log_retention, trials


def _match(body_id: int | None, path_id: int, what: str) -> None:
    if body_id not in (None, 0, path_id):
        raise InvalidArgument(f"body {what} {body_id} does not match the path {path_id}")


@put("/api/v1/experiments/{experiment_id:int}/retain_logs")
async def retain_experiment_logs(
    data: JSONBody[RetainExperimentLogs], db: Db, principal: Caller, experiment_id: Id32
) -> Empty:
    _match(data.experiment_id, experiment_id, "experimentId")
    exp = await experiments.get_experiment(db, experiment_id)
    experiments.can_modify(principal.user, exp)
    tasks = await log_retention.trial_task_ids(db, [exp.id])
    await log_retention.set_retention(db, tasks, data.num_days)
    return Empty()


@put("/api/v1/trials/{trial_id:int}/retain_logs")
async def retain_trial_logs(
    data: JSONBody[RetainTrialLogs], db: Db, principal: Caller, trial_id: Id32
) -> Empty:
    _match(data.trial_id, trial_id, "trialId")
    trial = await trials.get_trial(db, trial_id)
    experiments.can_modify(
        principal.user, await experiments.get_experiment(db, trial.experiment_id)
    )
    await log_retention.set_retention(db, [trial.task_id], data.num_days)
    return Empty()


@get("/api/v1/trials/{trial_id:int}/remaining_log_retention_days")
async def remaining_days(db: Db, principal: Caller, ctx: Ctx, trial_id: Id32) -> RemainingDays:
    trial = await trials.get_trial(db, trial_id)
    task = await db.get(Task, trial.task_id)
    global_days = ctx.periodic.log_retention_days if ctx.periodic is not None else None
    days = rules.remaining_days(
        trial.end_time, ctx.clock(), task.log_retention_days if task else None, global_days
    )
    return RemainingDays(remaining_days=days)


ROUTES = [retain_experiment_logs, retain_trial_logs, remaining_days]
