"""Wire conventions shared by every resource: camelCase JSON, pagination, errors."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from controlplane.domain import limits

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


def _within_config_bytes(value: Any) -> Any:
    if isinstance(value, dict):
        size = limits.json_size(value)
        if size > limits.CONFIG_BYTES:
            raise ValueError(
                f"the config is {size} bytes as JSON; at most {limits.CONFIG_BYTES} are allowed"
            )
    return value


# A config given as a JSON object (YAML text has its own check, of the same size).
JsonConfigOrText = Annotated[dict[str, Any] | str, AfterValidator(_within_config_bytes)]

# A label, a username, a template name, an id: short text.
ShortText = Annotated[str, Field(max_length=limits.SHORT_NAME_CHARS)]


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
