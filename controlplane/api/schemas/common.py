"""Wire conventions shared by every resource: camelCase JSON, pagination, errors."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

INT32_MAX = 2**31 - 1

# A protobuf int32 (ids, step counts): what the Determined wire and our INTEGER columns hold.
Int32 = Annotated[int, Field(ge=-(2**31), le=INT32_MAX)]


def _as_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:  # e.g. 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        raise ValueError("timestamp is out of range") from exc


# A protobuf Timestamp: RFC 3339 with a zone offset (a naive time is ambiguous), kept in UTC.
UtcTimestamp = Annotated[AwareDatetime, AfterValidator(_as_utc)]


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
