"""Access tokens: `det token create/list/describe/edit/revoke` (Determined's /api/v1/tokens)."""

from __future__ import annotations

from typing import Annotated

from litestar import get, patch, post
from litestar.params import JSONBody, QueryParameter

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.params import Id32, Limit, Offset, OrderBy, check_ids, clamp_limit, is_desc
from controlplane.api.schemas.common import Pagination
from controlplane.api.schemas.tokens import (
    GetAccessTokensResponse,
    PatchAccessTokenRequest,
    PatchAccessTokenResponse,
    PostAccessTokenRequest,
    PostAccessTokenResponse,
    TokenInfo,
)
from controlplane.db.models import UserSession
from controlplane.domain.errors import InvalidArgument
from controlplane.services import access_tokens


def token_out(row: UserSession) -> TokenInfo:
    return TokenInfo(
        id=row.id,
        user_id=row.user_id,
        expiry=row.expires_at,
        created_at=row.created_at,
        token_type=f"TOKEN_TYPE_{row.token_type}",
        revoked=row.revoked_at is not None,
        description=row.description,
    )


@post("/api/v1/tokens", status_code=200)
async def create_token(
    data: JSONBody[PostAccessTokenRequest], db: Db, principal: Caller, ctx: Ctx
) -> PostAccessTokenResponse:
    made = await access_tokens.create(
        db,
        principal.user,
        data.user_id,
        lifespan=data.lifespan,
        description=data.description,
        now=ctx.clock(),
    )
    return PostAccessTokenResponse(token=made.token, token_id=made.token_id)


@get("/api/v1/tokens")
async def list_tokens(
    db: Db,
    principal: Caller,
    ctx: Ctx,
    offset: Offset = 0,
    limit: Limit = 0,
    order_by: OrderBy = "ORDER_BY_UNSPECIFIED",
    username: Annotated[str | None, QueryParameter(max_length=255)] = None,
    show_inactive: Annotated[bool, QueryParameter(name="showInactive")] = False,
    token_ids: Annotated[list[int] | None, QueryParameter(name="tokenIds")] = None,
) -> GetAccessTokensResponse:
    ids = tuple(token_ids or ())
    check_ids(*ids)
    rows = await access_tokens.listed(
        db,
        principal.user,
        username=username,
        token_ids=ids,
        show_inactive=show_inactive,
        descending=is_desc(order_by),
        now=ctx.clock(),
    )
    page = clamp_limit(limit, default=-1)
    shown = rows[offset:] if page < 0 else rows[offset : offset + page]
    return GetAccessTokensResponse(
        token_info=[token_out(r) for r in shown],
        pagination=Pagination.of(offset, page, len(shown), len(rows)),
    )


@patch("/api/v1/tokens/{token_id:int}")
async def patch_token(
    data: JSONBody[PatchAccessTokenRequest], db: Db, principal: Caller, ctx: Ctx, token_id: Id32
) -> PatchAccessTokenResponse:
    if data.token_id is not None and data.token_id != token_id:
        raise InvalidArgument(f"body tokenId {data.token_id} does not match the path {token_id}")
    row = await access_tokens.patch(
        db,
        principal.user,
        token_id,
        description=data.description,
        revoke=data.set_revoked,
        now=ctx.clock(),
    )
    return PatchAccessTokenResponse(token_info=token_out(row))


ROUTES = [create_token, list_tokens, patch_token]
