"""Wire conventions shared by every resource: camelCase JSON, pagination, errors."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

INT32_MAX = 2**31 - 1


class Wire(BaseModel):
    """protojson style: lowerCamel on the wire, snake_case accepted on input as well."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", serialize_by_alias=True
    )


class Pagination(Wire):
    offset: int = 0
    limit: int = 0
    start_index: int = 0
    end_index: int = 0
    total: int = 0

    @classmethod
    def of(cls, offset: int, limit: int, returned: int, total: int) -> Pagination:
        return cls(
            offset=offset,
            limit=limit,
            start_index=min(offset, total),
            end_index=min(offset + returned, total),
            total=total,
        )


class ErrorDetail(Wire):
    error: str


class ErrorBody(Wire):
    """What every failure returns; the Determined client reads `message` or `error.error`."""

    code: int = Field(description="gRPC status code")
    message: str
    error: ErrorDetail
    details: list[dict[str, Any]] = Field(default_factory=list)
