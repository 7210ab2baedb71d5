"""An experiment's labels, as Determined 0.38 serves them: PUT and DELETE
/api/v1/experiments/{id}/labels/{label} (PutExperimentLabel, DeleteExperimentLabel: both answer
the experiment's labels afterwards, and adding a label it has or removing one it lacks changes
nothing) and GET /api/v1/experiment/labels (GetExperimentLabels: every label in use, most used
first, optionally of one project's experiments)."""

from __future__ import annotations

from typing import Annotated

from litestar import delete, get, put
from litestar.params import Parameter, QueryParameter

from controlplane.api.deps import Caller, Db
from controlplane.api.params import Id32
from controlplane.api.schemas.common import Wire
from controlplane.domain import limits
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.labels import add_label, popular_labels, remove_label
from controlplane.domain.rbac import Permission
from controlplane.services import experiment_control, experiments
from controlplane.services.experiment_labels import labels_in_use

_PATH = "/api/v1/experiments/{experiment_id:int}/labels/{label:path}"

Label = Annotated[str, Parameter(max_length=limits.SHORT_NAME_CHARS + 1)]


class LabelsResponse(Wire):
    labels: list[str]


def _check(raw: object) -> str:
    # A `path` parameter, so that a label holding "/" (sent as %2F) still reaches this route;
    # it arrives with the separating "/" in front.
    label = str(raw).removeprefix("/")
    if len(label) > limits.SHORT_NAME_CHARS:
        raise InvalidArgument(f"label is longer than {limits.SHORT_NAME_CHARS} characters")
    if not label.strip():
        raise InvalidArgument("label must not be empty")
    if "\x00" in label:
        raise InvalidArgument("label must not contain NUL bytes")
    return label


async def _set_labels(db: Db, principal: Caller, experiment_id: int, labels: list[str]) -> None:
    patch = experiment_control.ExperimentPatch(labels=labels)
    await experiment_control.patch(db, principal.user, experiment_id, patch)


@put(_PATH, status_code=200)
async def put_experiment_label(
    db: Db, principal: Caller, experiment_id: Id32, label: Label
) -> LabelsResponse:
    exp = await experiments.get_experiment(db, experiment_id)
    labels = add_label(list(exp.labels or []), _check(label))
    if len(labels) > limits.LABELS:
        raise InvalidArgument(f"an experiment holds at most {limits.LABELS} labels")
    if labels != list(exp.labels or []):
        await _set_labels(db, principal, experiment_id, labels)
    else:
        experiments.can_modify(principal.user, exp)
    return LabelsResponse(labels=labels)


@delete(_PATH, status_code=200)
async def delete_experiment_label(
    db: Db, principal: Caller, experiment_id: Id32, label: Label
) -> LabelsResponse:
    exp = await experiments.get_experiment(db, experiment_id)
    labels = remove_label(list(exp.labels or []), _check(label))
    if labels != list(exp.labels or []):
        await _set_labels(db, principal, experiment_id, labels)
    else:
        experiments.can_modify(principal.user, exp)
    return LabelsResponse(labels=labels)


@get("/api/v1/experiment/labels")
async def get_experiment_labels(
    db: Db,
    principal: Caller,
    project_id: Annotated[int | None, QueryParameter(name="projectId", ge=0, le=2**31 - 1)] = None,
) -> LabelsResponse:
    per_experiment = await labels_in_use(
        db,
        project_id=project_id or None,
        workspaces=principal.workspaces(Permission.VIEW_EXPERIMENT_METADATA),
    )
    return LabelsResponse(labels=popular_labels(per_experiment))


ROUTES = [put_experiment_label, delete_experiment_label, get_experiment_labels]
