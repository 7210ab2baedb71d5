"""`det experiment continue` (Determined's ContinueExperiment): an ended experiment runs again,
with config overrides, its trials resuming from their latest checkpoints.

As in Determined 0.38: only an ended experiment continues; a single-trial experiment continues
its trial whatever its end (to train it longer, say); a search continues the trials that did not
complete (errored or cancelled) and keeps its hyperparameter space and searcher. The continued
trials keep their ids and their metrics; the experiment completes when they have ended (the
search that made them is over, so no searcher decides any more).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.api.schemas.expconf import (
    ExperimentConfigError,
    load_yaml_mapping,
    merge_configs,
)
from controlplane.db.models import Experiment, Task, Trial, User
from controlplane.domain.errors import InvalidArgument, InvalidTransition, NotFound
from controlplane.domain.states import RunState
from controlplane.services import history, search
from controlplane.services.experiments import (
    ExperimentDefaults,
    NewExperiment,
    build_config,
    can_modify,
)
from controlplane.services.reschedule import mark_reschedule

S = RunState
# What a continued search may not change: its trials would no longer be the search's.
FIXED_KEYS = ("searcher", "hyperparameters")


def _overrides(text: str | None) -> dict[str, Any]:
    if not text or not text.strip():
        return {}
    try:
        data, _lines = load_yaml_mapping(text)
    except ExperimentConfigError as exc:
        raise InvalidArgument(f"invalid overrideConfig:\n{exc}") from exc
    return dict(data or {})


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


async def continue_experiment(
    session: AsyncSession,
    user: User,
    experiment_id: int,
    override_config: str | None,
    defaults: ExperimentDefaults,
    now: datetime,
) -> Experiment:
    exp = await search.lock_experiment(session, experiment_id)
    if exp is None:
        raise NotFound(f"experiment {experiment_id} not found")
    can_modify(user, exp)
    state = S(exp.state)
    if not state.is_terminal or state is S.DELETED:
        raise InvalidTransition(
            f"experiment {exp.id} is {state.wire}; only an ended experiment can be continued"
        )
    merged = merge_configs(_overrides(override_config), dict(exp.config))
    new = NewExperiment(config=merged, project_id=exp.project_id)
    expanded, _text, _project = await build_config(session, new, defaults, now)
    trials = list(
        await session.scalars(select(Trial).where(Trial.experiment_id == exp.id).order_by(Trial.id))
    )
    single = len(trials) == 1
    if not single:
        for key in FIXED_KEYS:
            if not _same(expanded.get(key), exp.config.get(key)):
                raise InvalidArgument(
                    f"{key} cannot change when a search of {len(trials)} trials is continued"
                )
    chosen = trials if single else [t for t in trials if t.state != S.COMPLETED.value]
    if not chosen:
        raise InvalidArgument(f"experiment {exp.id} has nothing to continue: every trial completed")
    exp.config = {**expanded, "resources": exp.config.get("resources") or {}}
    search.forget(exp)
    history.move_experiment(session, exp, S.ACTIVE, now)
    exp.end_time = None
    for trial in chosen:
        history.move_trial(session, trial, S.ACTIVE, now)
        trial.end_time = None
        trial.restarts = 0
        trial.early_exit_reason = None
        trial.paused_by_searcher = False
        task = await session.get(Task, trial.task_id)
        if task is not None:
            task.end_time = None
    mark_reschedule(session, exp.resource_pool)
    return exp
