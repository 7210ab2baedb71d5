"""The model registry: `/api/v1/models…` (Determined's paths and shapes).

A model is named in paths by its name or, when the segment is a number, by its id (the
Determined client does both: `det model register-version --json` posts to the id).
"""

from __future__ import annotations

from typing import Annotated

from litestar import delete, get, patch, post
from litestar.params import FromQuery, JSONBody, Parameter, QueryParameter
from sqlalchemy import select

from controlplane.api.deps import ApiContext, Caller, Ctx, Db
from controlplane.api.params import Id32, Limit, Offset, OrderBy, check_ids, clamp_limit, is_desc
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.models import (
    ModelLabelsResponse,
    ModelOut,
    ModelResponse,
    ModelsResponse,
    ModelVersionOut,
    ModelVersionResponse,
    ModelVersionsResponse,
    MoveModelRequest,
    PatchModelRequest,
    PatchModelVersionRequest,
    PostModelRequest,
    PostModelVersionRequest,
)
from controlplane.api.schemas.reports import Empty
from controlplane.api.serializers import checkpoint_out
from controlplane.db.models import ModelVersion, RegisteredModel, User
from controlplane.domain import limits
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.rbac import Permission
from controlplane.services import checkpoints
from controlplane.services import model_registry as registry
from controlplane.services.model_registry import ModelFields, VersionFields

ModelName = Annotated[str, Parameter(max_length=limits.SHORT_NAME_CHARS)]
StrList = Annotated[list[str] | None, Parameter()]
IntList = Annotated[list[int] | None, Parameter()]
_MODEL = "/api/v1/models/{model_name:str}"
_VERSION = _MODEL + "/versions/{version:int}"


async def _wake_gc(db: Db, ctx: ApiContext) -> None:
    """Released checkpoints: the GC pass runs now, and must see the deletion committed."""
    if ctx.periodic is not None:
        await db.commit()
        ctx.periodic.wake_gc()


async def _usernames(db: Db, user_ids: set[int]) -> dict[int, str]:
    if not user_ids:
        return {}
    rows = await db.execute(select(User.id, User.username).where(User.id.in_(user_ids)))
    return {uid: name for uid, name in rows.all()}


async def _models_out(db: Db, models: list[RegisteredModel]) -> list[ModelOut]:
    counts = await registry.version_counts(db, [m.id for m in models])
    users = await _usernames(db, {m.user_id for m in models})
    return [
        ModelOut(
            id=m.id,
            name=m.name,
            description=m.description,
            notes=m.notes,
            labels=list(m.labels or []),
            metadata=dict(m.metadata_ or {}),
            archived=m.archived,
            creation_time=m.created_at,
            last_updated_time=m.updated_at,
            num_versions=counts.get(m.id, 0),
            user_id=m.user_id,
            username=users.get(m.user_id, ""),
            workspace_id=m.workspace_id,
        )
        for m in models
    ]


async def _model_out(db: Db, model: RegisteredModel) -> ModelOut:
    return (await _models_out(db, [model]))[0]


async def _versions_out(
    db: Db, model: RegisteredModel, versions: list[ModelVersion]
) -> list[ModelVersionOut]:
    model_out = await _model_out(db, model)
    users = await _usernames(db, {v.user_id for v in versions})
    out = []
    for v in versions:
        ckpt = await checkpoints.get_checkpoint(db, v.checkpoint_uuid)
        out.append(
            ModelVersionOut(
                id=v.id,
                version=v.version,
                model=model_out,
                checkpoint=checkpoint_out(await checkpoints.view(db, ckpt)),
                name=v.name,
                comment=v.comment,
                notes=v.notes,
                labels=list(v.labels or []),
                metadata=dict(v.metadata_ or {}),
                creation_time=v.created_at,
                last_updated_time=v.updated_at,
                user_id=v.user_id,
                username=users.get(v.user_id, ""),
            )
        )
    return out


@post("/api/v1/models", status_code=200)
async def create_model(
    data: JSONBody[PostModelRequest], db: Db, principal: Caller, ctx: Ctx
) -> ModelResponse:
    fields = ModelFields(**data.model_dump(exclude_unset=True, by_alias=False))
    model = await registry.create_model(db, principal.user, fields, ctx.clock())
    return ModelResponse(model=await _model_out(db, model))


@get("/api/v1/models")
async def list_models(
    db: Db,
    principal: Caller,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    sort_by: Annotated[str, QueryParameter(name="sortBy")] = "SORT_BY_UNSPECIFIED",
    archived: FromQuery[bool | None] = None,
    name: Annotated[str | None, Parameter(max_length=limits.SHORT_NAME_CHARS)] = None,
    description: Annotated[str | None, Parameter(max_length=limits.DESCRIPTION_CHARS)] = None,
    model_id: Annotated[int | None, QueryParameter(name="id", ge=0, le=2**31 - 1)] = None,
    labels: StrList = None,
    users: StrList = None,
    user_ids: Annotated[list[int] | None, QueryParameter(name="userIds")] = None,
    workspace_ids: Annotated[list[int] | None, QueryParameter(name="workspaceIds")] = None,
    workspace_names: Annotated[list[str] | None, QueryParameter(name="workspaceNames")] = None,
) -> ModelsResponse:
    check_ids(*(user_ids or []), *(workspace_ids or []))
    if sort_by not in registry.MODEL_SORTS:
        raise InvalidArgument(
            f"unknown sortBy {sort_by[:40]!r}: one of {list(registry.MODEL_SORTS)}"
        )
    page = clamp_limit(limit)
    rows, total = await registry.list_models(
        db,
        registry.ModelFilter(
            archived=archived,
            name=name,
            description=description,
            model_id=model_id or None,
            labels=tuple(labels or ()),
            user_ids=tuple(user_ids or ()),
            usernames=tuple(users or ()),
            workspace_ids=tuple(workspace_ids or ()),
            workspace_names=tuple(workspace_names or ()),
            workspaces=principal.workspaces(Permission.VIEW_MODEL_REGISTRY),
        ),
        sort_by=sort_by,
        descending=is_desc(order_by),
        offset=offset,
        limit=page,
    )
    return ModelsResponse(
        models=await _models_out(db, rows),
        pagination=Pagination.of(offset, page, len(rows), total),
    )


@get("/api/v1/model/labels")
async def model_labels(
    db: Db,
    principal: Caller,
    workspace_id: Annotated[
        int | None, QueryParameter(name="workspaceId", ge=0, le=2**31 - 1)
    ] = None,
) -> ModelLabelsResponse:
    visible = principal.workspaces(Permission.VIEW_MODEL_REGISTRY)
    return ModelLabelsResponse(labels=await registry.model_labels(db, workspace_id, visible))


@get(_MODEL)
async def get_model(db: Db, principal: Caller, model_name: ModelName) -> ModelResponse:
    return ModelResponse(model=await _model_out(db, await registry.get_model(db, model_name)))


@patch(_MODEL)
async def patch_model(
    data: JSONBody[PatchModelRequest], db: Db, principal: Caller, ctx: Ctx, model_name: ModelName
) -> ModelResponse:
    model = await registry.get_model(db, model_name)
    fields = ModelFields(**data.model_dump(exclude_unset=True, by_alias=False))
    await registry.patch_model(db, principal.user, model, fields, ctx.clock())
    return ModelResponse(model=await _model_out(db, model))


@post(_MODEL + "/move", status_code=200)
async def move_model(
    data: JSONBody[MoveModelRequest], db: Db, principal: Caller, ctx: Ctx, model_name: ModelName
) -> Empty:
    model = await registry.get_model(db, model_name)
    fields = ModelFields(workspace_id=data.destination_workspace_id)
    await registry.patch_model(db, principal.user, model, fields, ctx.clock())
    return Empty()


def _archiver(path: str, archived: bool):  # type: ignore[no-untyped-def]
    @post(path, status_code=200)
    async def handler(db: Db, principal: Caller, ctx: Ctx, model_name: ModelName) -> Empty:
        model = await registry.get_model(db, model_name)
        registry.set_archived(principal.user, model, archived, ctx.clock())
        return Empty()

    return handler


archive_model = _archiver(_MODEL + "/archive", True)
unarchive_model = _archiver(_MODEL + "/unarchive", False)


@delete(_MODEL, status_code=200)
async def delete_model(db: Db, principal: Caller, ctx: Ctx, model_name: ModelName) -> Empty:
    model = await registry.get_model(db, model_name)
    await registry.delete_model(db, principal.user, model, ctx.clock())
    await _wake_gc(db, ctx)
    return Empty()


@get(_MODEL + "/versions")
async def list_versions(
    db: Db,
    principal: Caller,
    model_name: ModelName,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    sort_by: Annotated[
        str,
        QueryParameter(name="sortBy", pattern="^SORT_BY_(UNSPECIFIED|VERSION|CREATION_TIME)$"),
    ] = "SORT_BY_UNSPECIFIED",
) -> ModelVersionsResponse:
    model = await registry.get_model(db, model_name)
    page = clamp_limit(limit)
    rows, total = await registry.list_versions(
        db,
        model,
        by_time=sort_by == "SORT_BY_CREATION_TIME",
        descending=is_desc(order_by),
        offset=offset,
        limit=page,
    )
    return ModelVersionsResponse(
        model=await _model_out(db, model),
        model_versions=await _versions_out(db, model, rows),
        pagination=Pagination.of(offset, page, len(rows), total),
    )


@post(_MODEL + "/versions", status_code=200)
async def create_version(
    data: JSONBody[PostModelVersionRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    model_name: ModelName,
) -> ModelVersionResponse:
    model = await registry.get_model(db, model_name)
    fields = VersionFields(
        **data.model_dump(exclude={"checkpoint_uuid", "model_name"}, by_alias=False)
    )
    version = await registry.create_version(
        db, principal.user, model, data.checkpoint_uuid, fields, ctx.clock()
    )
    return ModelVersionResponse(model_version=(await _versions_out(db, model, [version]))[0])


@get(_VERSION)
async def get_version(
    db: Db, principal: Caller, model_name: ModelName, version: Id32
) -> ModelVersionResponse:
    model = await registry.get_model(db, model_name)
    row = await registry.get_version(db, model, version)
    return ModelVersionResponse(model_version=(await _versions_out(db, model, [row]))[0])


@patch(_VERSION)
async def patch_version(
    data: JSONBody[PatchModelVersionRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    model_name: ModelName,
    version: Id32,
) -> ModelVersionResponse:
    model = await registry.get_model(db, model_name)
    row = await registry.get_version(db, model, version)
    fields = VersionFields(**data.model_dump(exclude_unset=True, by_alias=False))
    registry.patch_version(principal.user, model, row, fields, ctx.clock())
    return ModelVersionResponse(model_version=(await _versions_out(db, model, [row]))[0])


@delete(_VERSION, status_code=200)
async def delete_version(
    db: Db, principal: Caller, ctx: Ctx, model_name: ModelName, version: Id32
) -> Empty:
    model = await registry.get_model(db, model_name)
    row = await registry.get_version(db, model, version)
    await registry.delete_version(db, principal.user, model, row, ctx.clock())
    await _wake_gc(db, ctx)
    return Empty()


ROUTES = [
    create_model,
    list_models,
    model_labels,
    get_model,
    patch_model,
    move_model,
    archive_model,
    unarchive_model,
    delete_model,
    list_versions,
    create_version,
    get_version,
    patch_version,
    delete_version,
]
