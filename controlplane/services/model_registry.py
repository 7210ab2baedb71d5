"""The model registry: models, and versions that register checkpoints under a model.

Everyone reads every model; only a model's owner or an admin changes it or its versions (the
creator of a version may change that version too). A registered checkpoint is kept from
checkpoint GC (`registered_checkpoint_uuids`) until the version naming it is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import Select

from controlplane.db.models import (
    Checkpoint,
    Experiment,
    ModelVersion,
    RegisteredModel,
    Trial,
    User,
    Workspace,
)
from controlplane.domain import limits
from controlplane.domain import registry_names as names
from controlplane.domain.checkpoint_refs import check_uuid
from controlplane.domain.errors import Conflict, InvalidArgument, NotFound, PermissionDenied
from controlplane.services.rbac_scopes import check_placement, in_workspaces


async def registered_checkpoint_uuids(session: AsyncSession) -> set[str]:
    """Every checkpoint some model version registers: checkpoint GC must keep these."""
    return set(await session.scalars(select(ModelVersion.checkpoint_uuid).distinct()))


@dataclass(frozen=True)
class ModelFields:
    """What a create or a patch sets; None leaves a field as it is (or at its default)."""

    name: str | None = None
    description: str | None = None
    notes: str | None = None
    labels: list[str] | None = None
    metadata: dict[str, Any] | None = None
    workspace_id: int | None = None
    workspace_name: str | None = None


@dataclass(frozen=True)
class VersionFields:
    name: str | None = None
    comment: str | None = None
    notes: str | None = None
    labels: list[str] | None = None
    metadata: dict[str, Any] | None = None


def _check_common(f: ModelFields | VersionFields, what: str) -> None:
    if f.notes is not None:
        names.check_text(f"the {what}'s notes", f.notes, limits.NOTES_CHARS)
    if f.labels is not None:
        names.check_labels(f"the {what}'s labels", f.labels)
    if f.metadata is not None:
        names.check_metadata(f"the {what}'s metadata", f.metadata)


def check_model_fields(f: ModelFields) -> None:
    if f.name is not None:
        names.check_model_name(f.name)
    if f.description is not None:
        names.check_text("the model's description", f.description, limits.DESCRIPTION_CHARS)
    _check_common(f, "model")


def check_version_fields(f: VersionFields) -> None:
    if f.name is not None:
        names.check_text("the version's name", f.name, limits.SHORT_NAME_CHARS)
    if f.comment is not None:
        names.check_text("the version's comment", f.comment, limits.DESCRIPTION_CHARS)
    _check_common(f, "model version")


def can_change(user: User, model: RegisteredModel) -> None:
    if not (user.admin or user.id == model.user_id):
        raise PermissionDenied(f"only the owner of model '{model.name}' or an admin may change it")


def can_change_version(user: User, model: RegisteredModel, version: ModelVersion) -> None:
    if not (user.admin or user.id in (model.user_id, version.user_id)):
        raise PermissionDenied(
            f"only the owner of model '{model.name}', the creator of its version "
            f"{version.version} or an admin may change that version"
        )


async def get_model(session: AsyncSession, identifier: str) -> RegisteredModel:
    """A model by name, or by id when the identifier is a number (no model name is one)."""
    if "\x00" in identifier:
        raise InvalidArgument("a model name may not contain NUL")
    model = await session.scalar(select(RegisteredModel).where(RegisteredModel.name == identifier))
    if model is None and identifier.isascii() and identifier.isdigit() and int(identifier) < 2**31:
        model = await session.get(RegisteredModel, int(identifier))
    if model is None:
        raise NotFound(f"model '{identifier}' not found")
    return model


async def _workspace_for(session: AsyncSession, f: ModelFields) -> Workspace | None:
    if f.workspace_name:
        ws = await session.scalar(select(Workspace).where(Workspace.name == f.workspace_name))
        if ws is None:
            raise NotFound(f"workspace '{f.workspace_name}' not found")
        return ws
    if f.workspace_id:
        ws = await session.get(Workspace, f.workspace_id)
        if ws is None:
            raise NotFound(f"workspace {f.workspace_id} not found")
        return ws
    return None


def _writable(ws: Workspace) -> Workspace:
    if ws.archived:
        raise InvalidArgument(f"workspace '{ws.name}' is archived: unarchive it first")
    return ws


async def _name_free(session: AsyncSession, name: str) -> None:
    if await session.scalar(select(RegisteredModel.id).where(RegisteredModel.name == name)):
        raise Conflict(f"a model named '{name}' already exists")


async def create_model(
    session: AsyncSession, user: User, f: ModelFields, now: datetime
) -> RegisteredModel:
    if f.name is None:
        raise InvalidArgument("a model needs a name")
    check_model_fields(f)
    ws = await _workspace_for(session, f) or await session.get(Workspace, 1)
    assert ws is not None  # bootstrap creates the default workspace
    check_placement(session, ws.id)  # RBAC: the workspace it lands in, default or named
    await _name_free(session, f.name)
    model = RegisteredModel(
        name=f.name,
        description=f.description or "",
        notes=f.notes or "",
        labels=list(f.labels or []),
        metadata_=dict(f.metadata or {}),
        workspace_id=_writable(ws).id,
        user_id=user.id,
        archived=False,
        created_at=now,
        updated_at=now,
    )
    session.add(model)
    await session.flush()
    return model


async def patch_model(
    session: AsyncSession, user: User, model: RegisteredModel, f: ModelFields, now: datetime
) -> RegisteredModel:
    can_change(user, model)
    check_model_fields(f)
    if f.name is not None and f.name != model.name:
        await _name_free(session, f.name)
        model.name = f.name
    if f.description is not None:
        model.description = f.description
    if f.notes is not None:
        model.notes = f.notes
    if f.labels is not None:
        model.labels = list(f.labels)
    if f.metadata is not None:
        model.metadata_ = dict(f.metadata)
    ws = await _workspace_for(session, f)
    if ws is not None:
        check_placement(session, ws.id)  # RBAC: a move, by id or by name
        model.workspace_id = _writable(ws).id
    model.updated_at = now
    await session.flush()
    return model


def set_archived(user: User, model: RegisteredModel, archived: bool, now: datetime) -> None:
    can_change(user, model)
    model.archived = archived
    model.updated_at = now


async def _release(session: AsyncSession, uuids: set[str], now: datetime) -> None:
    """Ask checkpoint GC to look again at the experiments of checkpoints no version registers
    any more: their policy may no longer keep them (the GC job runs outside this request)."""
    released = uuids - await registered_checkpoint_uuids(session)
    if not released:
        return
    experiments = (
        select(Trial.experiment_id)
        .join(Checkpoint, Checkpoint.trial_id == Trial.id)
        .where(Checkpoint.uuid.in_(released))
    )
    for exp in await session.scalars(select(Experiment).where(Experiment.id.in_(experiments))):
        exp.gc_requested_at = now


async def delete_model(
    session: AsyncSession, user: User, model: RegisteredModel, now: datetime
) -> None:
    """Deletes its versions too, which releases their checkpoints to GC."""
    can_change(user, model)
    uuids = set()
    for version in await session.scalars(
        select(ModelVersion).where(ModelVersion.model_id == model.id)
    ):
        uuids.add(version.checkpoint_uuid)
        await session.delete(version)
    await session.delete(model)
    await session.flush()
    await _release(session, uuids, now)


_MODEL_SORT = {
    "SORT_BY_UNSPECIFIED": RegisteredModel.id,
    "SORT_BY_NAME": RegisteredModel.name,
    "SORT_BY_DESCRIPTION": RegisteredModel.description,
    "SORT_BY_CREATION_TIME": RegisteredModel.created_at,
    "SORT_BY_LAST_UPDATED_TIME": RegisteredModel.updated_at,
    "SORT_BY_WORKSPACE": RegisteredModel.workspace_id,
}
MODEL_SORTS = (*_MODEL_SORT, "SORT_BY_NUM_VERSIONS")


@dataclass(frozen=True)
class ModelFilter:
    archived: bool | None = None
    name: str | None = None
    description: str | None = None
    model_id: int | None = None
    labels: tuple[str, ...] = ()
    user_ids: tuple[int, ...] = ()
    usernames: tuple[str, ...] = ()
    workspace_ids: tuple[int, ...] = ()
    workspace_names: tuple[str, ...] = ()
    # Under RBAC, the workspaces the caller may view (None: every workspace).
    workspaces: frozenset[int] | None = None


def _filtered(f: ModelFilter) -> Select[tuple[RegisteredModel]]:
    q = select(RegisteredModel)
    if f.archived is not None:
        q = q.where(RegisteredModel.archived == f.archived)
    if f.name:
        q = q.where(RegisteredModel.name.icontains(f.name, autoescape=True))
    if f.description:
        q = q.where(RegisteredModel.description.icontains(f.description, autoescape=True))
    if f.model_id:
        q = q.where(RegisteredModel.id == f.model_id)
    if f.user_ids:
        q = q.where(RegisteredModel.user_id.in_(f.user_ids))
    if f.usernames:
        q = q.where(
            RegisteredModel.user_id.in_(select(User.id).where(User.username.in_(f.usernames)))
        )
    if f.workspace_ids:
        q = q.where(RegisteredModel.workspace_id.in_(f.workspace_ids))
    if f.workspace_names:
        named = select(Workspace.id).where(Workspace.name.in_(f.workspace_names))
        q = q.where(RegisteredModel.workspace_id.in_(named))
    if f.workspaces is not None:
        q = q.where(in_workspaces(RegisteredModel.workspace_id, f.workspaces))
    return q


async def list_models(
    session: AsyncSession,
    f: ModelFilter,
    *,
    sort_by: str,
    descending: bool,
    offset: int,
    limit: int,
) -> tuple[list[RegisteredModel], int]:
    rows = list(await session.scalars(_filtered(f)))
    # Labels are a JSON list on both databases: filter them here (a page is small anyway).
    if f.labels:
        rows = [m for m in rows if set(f.labels) <= set(m.labels or [])]
    if sort_by == "SORT_BY_NUM_VERSIONS":
        counts = await version_counts(session, [m.id for m in rows])
        rows.sort(key=lambda m: (counts.get(m.id, 0), m.id), reverse=descending)
    else:
        column = _MODEL_SORT[sort_by]
        rows.sort(key=lambda m: (getattr(m, column.key), m.id), reverse=descending)
    total = len(rows)
    page = rows[offset:] if limit < 0 else rows[offset : offset + limit]
    return page, total


async def model_labels(
    session: AsyncSession, workspace_id: int | None, workspaces: frozenset[int] | None = None
) -> list[str]:
    """Every label on a model (of the `workspaces` the caller may view, under RBAC), the most
    used first (then by name)."""
    q = select(RegisteredModel.labels).where(
        in_workspaces(RegisteredModel.workspace_id, workspaces)
    )
    if workspace_id:
        q = q.where(RegisteredModel.workspace_id == workspace_id)
    counts: dict[str, int] = {}
    for labels in await session.scalars(q):
        for label in set(labels or []):
            counts[label] = counts.get(label, 0) + 1
    return sorted(counts, key=lambda label: (-counts[label], label))


async def version_counts(session: AsyncSession, model_ids: list[int]) -> dict[int, int]:
    if not model_ids:
        return {}
    q = (
        select(ModelVersion.model_id, func.count())
        .where(ModelVersion.model_id.in_(model_ids))
        .group_by(ModelVersion.model_id)
    )
    return {mid: n for mid, n in (await session.execute(q)).all()}


async def get_version(session: AsyncSession, model: RegisteredModel, number: int) -> ModelVersion:
    version = await session.scalar(
        select(ModelVersion).where(
            ModelVersion.model_id == model.id, ModelVersion.version == number
        )
    )
    if version is None:
        raise NotFound(f"model '{model.name}' has no version {number}")
    return version


async def create_version(
    session: AsyncSession,
    user: User,
    model: RegisteredModel,
    checkpoint_uuid: str,
    f: VersionFields,
    now: datetime,
) -> ModelVersion:
    can_change(user, model)
    check_version_fields(f)
    if model.archived:
        raise InvalidArgument(f"model '{model.name}' is archived: unarchive it to add versions")
    ckpt = await session.get(Checkpoint, check_uuid(checkpoint_uuid))
    if ckpt is None:
        raise NotFound(f"checkpoint {checkpoint_uuid[:80]} not found")
    if ckpt.state != "COMPLETED":
        raise InvalidArgument(
            f"checkpoint {checkpoint_uuid} is {ckpt.state.lower()}: only a completed "
            "checkpoint may be registered"
        )
    if ckpt.delete_requested_at is not None and ckpt.delete_globs is None:
        # Its files are going (GC, `det checkpoint delete`, or its project's deletion): a
        # version registered now would outlive them.
        raise InvalidArgument(
            f"checkpoint {checkpoint_uuid} is being deleted: only a completed "
            "checkpoint may be registered"
        )
    last = await session.scalar(
        select(func.max(ModelVersion.version)).where(ModelVersion.model_id == model.id)
    )
    version = ModelVersion(
        model_id=model.id,
        version=(last or 0) + 1,
        checkpoint_uuid=checkpoint_uuid,
        name=f.name or "",
        comment=f.comment or "",
        notes=f.notes or "",
        labels=list(f.labels or []),
        metadata_=dict(f.metadata or {}),
        user_id=user.id,
        created_at=now,
        updated_at=now,
    )
    session.add(version)
    model.updated_at = now
    await session.flush()
    return version


def patch_version(
    user: User, model: RegisteredModel, version: ModelVersion, f: VersionFields, now: datetime
) -> ModelVersion:
    can_change_version(user, model, version)
    check_version_fields(f)
    for field in ("name", "comment", "notes"):
        value = getattr(f, field)
        if value is not None:
            setattr(version, field, value)
    if f.labels is not None:
        version.labels = list(f.labels)
    if f.metadata is not None:
        version.metadata_ = dict(f.metadata)
    version.updated_at = now
    return version


async def delete_version(
    session: AsyncSession,
    user: User,
    model: RegisteredModel,
    version: ModelVersion,
    now: datetime,
) -> None:
    can_change_version(user, model, version)
    await session.delete(version)
    await session.flush()
    await _release(session, {version.checkpoint_uuid}, now)


async def list_versions(
    session: AsyncSession,
    model: RegisteredModel,
    *,
    by_time: bool,
    descending: bool,
    offset: int,
    limit: int,
) -> tuple[list[ModelVersion], int]:
    column = ModelVersion.created_at if by_time else ModelVersion.version
    base = select(ModelVersion).where(ModelVersion.model_id == model.id)
    total = await session.scalar(select(func.count()).select_from(base.subquery())) or 0
    order = (column.desc(), ModelVersion.id.desc()) if descending else (column, ModelVersion.id)
    query = base.order_by(*order).offset(offset)
    if limit > 0:
        query = query.limit(limit)
    return list(await session.scalars(query)), total
