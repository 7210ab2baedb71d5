"""Access tokens on the wire (Determined's v1TokenInfo and its requests)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from controlplane.api.schemas.common import Int32, Pagination, Wire


class TokenInfo(Wire):
    id: int
    user_id: int
    expiry: datetime | None = None
    created_at: datetime | None = None
    token_type: str = "TOKEN_TYPE_ACCESS_TOKEN"
    revoked: bool = False
    description: str | None = None


class PostAccessTokenRequest(Wire):
    user_id: Int32
    lifespan: str | None = Field(default=None, max_length=64)
    description: str | None = Field(default=None, max_length=1024)


class PostAccessTokenResponse(Wire):
    token: str
    token_id: int


class GetAccessTokensResponse(Wire):
    token_info: list[TokenInfo]
    pagination: Pagination


class PatchAccessTokenRequest(Wire):
    token_id: Int32 | None = None
    description: str | None = Field(default=None, max_length=1024)
    set_revoked: bool | None = None


class PatchAccessTokenResponse(Wire):
    token_info: TokenInfo | None = None
