"""Config templates: `det template set/list/describe/remove`."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import delete, get, patch, post, put
from litestar.params import FromQuery, JSONBody, Parameter, QueryParameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Limit, Offset, OrderBy, clamp_limit, is_desc
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.reports import Empty
from controlplane.api.schemas.templates import (
    CreateTemplateRequest,
    RenameTemplateRequest,
    TemplateResponse,
    TemplatesResponse,
)
from controlplane.api.serializers import template_out
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.rbac import Permission
from controlplane.services import templates

Name = Annotated[str, Parameter(max_length=255)]


@get("/api/v1/templates")
async def list_templates(
    db: Db,
    principal: Caller,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    name: FromQuery[str | None] = None,
    workspace_ids: Annotated[list[int] | None, QueryParameter(name="workspaceIds")] = None,
) -> TemplatesResponse:
    page = clamp_limit(limit)
    ids = tuple(w for w in workspace_ids or () if 0 < w < 2**31)
    rows, total = await templates.list_templates(
        db,
        name=name,
        workspace_ids=ids,
        descending=is_desc(order_by),
        offset=offset,
        limit=page,
        workspaces=principal.workspaces(Permission.VIEW_TEMPLATES),
    )
    return TemplatesResponse(
        templates=[template_out(t) for t in rows],
        pagination=Pagination.of(offset, page, len(rows), total),
    )


@get("/api/v1/templates/{template_name:str}")
async def get_template(db: Db, principal: Caller, template_name: Name) -> TemplateResponse:
    return TemplateResponse(template=template_out(await templates.get_template(db, template_name)))


@post("/api/v1/templates/{template_name:str}", status_code=200)
async def create_template(
    data: JSONBody[CreateTemplateRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    template_name: Name,
) -> TemplateResponse:
    if data.name not in (None, "", template_name):
        raise InvalidArgument(f"body name '{data.name}' does not match the path '{template_name}'")
    tpl = await templates.create_template(
        db, principal.user, template_name, data.config, data.workspace_id, ctx.clock()
    )
    return TemplateResponse(template=template_out(tpl))


@patch("/api/v1/templates/{template_name:str}")
async def patch_template(
    data: JSONBody[dict[str, Any]], db: Db, principal: Caller, ctx: Ctx, template_name: Name
) -> TemplateResponse:
    """The Determined client sends the template YAML itself, as a JSON object, as the body."""
    tpl = await templates.replace_config(db, principal.user, template_name, data, ctx.clock())
    return TemplateResponse(template=template_out(tpl))


@put("/api/v1/templates/{template_name:str}")
async def put_template(
    data: JSONBody[CreateTemplateRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    template_name: Name,
) -> TemplateResponse:
    """Determined's PutTemplate: create or replace (its SDK's `put_template`)."""
    if data.name not in (None, "", template_name):
        raise InvalidArgument(f"body name '{data.name}' does not match the path '{template_name}'")
    tpl = await templates.put_template(
        db, principal.user, template_name, data.config, data.workspace_id, ctx.clock()
    )
    return TemplateResponse(template=template_out(tpl))


@patch("/api/v1/template/rename")
async def rename_template(
    data: JSONBody[RenameTemplateRequest], db: Db, principal: Caller, ctx: Ctx
) -> TemplateResponse:
    tpl = await templates.rename_template(
        db, principal.user, data.old_name, data.new_name, ctx.clock()
    )
    return TemplateResponse(template=template_out(tpl))


@delete("/api/v1/templates/{template_name:str}", status_code=200)
async def delete_template(db: Db, principal: Caller, template_name: Name) -> Empty:
    await templates.delete_template(db, principal.user, template_name)
    return Empty()


ROUTES = [
    list_templates,
    get_template,
    create_template,
    put_template,
    patch_template,
    rename_template,
    delete_template,
]
