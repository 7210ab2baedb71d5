"""Typed path and query parameters with the bounds the database can hold."""

from __future__ import annotations

from typing import Annotated

from litestar.params import Parameter, QueryParameter

from controlplane.api.schemas.common import INT32_MAX
from controlplane.domain.errors import InvalidArgument

Id32 = Annotated[int, Parameter(ge=1, le=INT32_MAX)]
# Litestar cannot bound the items of a list parameter, so list handlers call check_ids.
UserIds = Annotated[list[int] | None, QueryParameter(name="userIds")]
Offset = Annotated[int, Parameter(ge=0, le=INT32_MAX)]
Limit = Annotated[int, Parameter(ge=-1, le=INT32_MAX)]
OrderBy = Annotated[
    str,
    QueryParameter(
        name="orderBy",
        pattern="^ORDER_BY_(UNSPECIFIED|ASC|DESC)$",
    ),
]
PageLimit = 1000


def is_desc(order_by: str) -> bool:
    return order_by == "ORDER_BY_DESC"


def clamp_limit(limit: int, default: int = 100) -> int:
    """0 means the default page; -1 means everything; large pages are capped."""
    if limit == 0:
        return default
    if limit < 0:
        return -1
    return min(limit, PageLimit)


def check_ids(*values: int | None) -> None:
    """Ids beyond 32 bits are a 400, not a database overflow."""
    for value in values:
        if value is not None and abs(value) > INT32_MAX:
            raise InvalidArgument(f"id {value} is out of range")
