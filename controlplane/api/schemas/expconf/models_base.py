"""Base model and small shared pieces of the experiment config (lengths, mounts, devices)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError


class ConfigModel(BaseModel):
    """Base of every user-authored config block.

    Unknown keys are rejected, types are checked strictly (no "2" -> 2, no true -> 1), numbers
    must be finite, and an explicit YAML `null` on a known key means "unset" (the default
    applies), as in Determined's schemas where nearly every property is nullable.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _null_means_unset(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {
                key: value
                for key, value in data.items()
                if not (value is None and key in cls.model_fields)
            }
        return data


def config_error(message: str) -> PydanticCustomError:
    """A validation error with a fixed human message (safe for braces in the text)."""
    return PydanticCustomError("expconf", "{message}", {"message": message})


def fail_at(errors: list[tuple[tuple[str | int, ...], str, Any]]) -> ValidationError:
    """A ValidationError whose entries sit at the given locations relative to the model.

    Raised from a model validator, pydantic prefixes each location with the model's own, so a
    cross-field check can point at the exact key (e.g. ``hyperparameters.lr.minval``).
    """
    details = [
        InitErrorDetails(type=config_error(message), loc=loc, input=value)
        for loc, message, value in errors
    ]
    return ValidationError.from_exception_data("ExperimentConfig", details)


def type_name(value: Any) -> str:
    """A YAML-ish name for the type of a value, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


LENGTH_UNITS = ("batches", "records", "epochs")


class Length(ConfigModel):
    """A training length in one unit: ``{batches: N}``, ``{records: N}`` or ``{epochs: N}``."""

    batches: int | None = Field(default=None, ge=0, description="Length in batches.")
    records: int | None = Field(default=None, ge=0, description="Length in records.")
    epochs: int | None = Field(default=None, ge=0, description="Length in epochs.")

    @model_validator(mode="after")
    def _exactly_one_unit(self) -> Length:
        chosen = [unit for unit in LENGTH_UNITS if getattr(self, unit) is not None]
        if len(chosen) != 1:
            raise config_error("must set exactly one of batches, records or epochs")
        return self

    @property
    def unit(self) -> str:
        return next(unit for unit in LENGTH_UNITS if getattr(self, unit) is not None)

    @property
    def value(self) -> int:
        return int(getattr(self, self.unit))

    @model_serializer(mode="plain")
    def _dump(self) -> dict[str, int]:
        return {self.unit: self.value}


def _length_shape(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return "<int>"
    if isinstance(value, dict | Length):
        return "<length>"
    return None


def _positive_length(value: int | Length) -> int | Length:
    amount = value.value if isinstance(value, Length) else value
    if amount <= 0:
        raise config_error("max_length must be greater than 0")
    return value


MaxLength = Annotated[
    Annotated[int, Tag("<int>")] | Annotated[Length, Tag("<length>")],
    Discriminator(
        _length_shape,
        custom_error_type="expconf",
        custom_error_message="must be an integer or a mapping like {batches: N}",
    ),
    AfterValidator(_positive_length),
]
"""Deprecated ``searcher.max_length``: a positive integer or a positive `Length`."""


class BindMount(ConfigModel):
    """A host directory mounted into the task container."""

    host_path: str = Field(description="Absolute path on the agent's host.")
    container_path: str = Field(description="Where the host path appears in the container.")
    read_only: bool = Field(default=False, description="Mount read-only.")
    propagation: str = Field(default="rprivate", description="Docker mount propagation mode.")


class Device(ConfigModel):
    """A host device exposed to the task container (string form ``host:container[:mode]``)."""

    host_path: str = Field(description="Device path on the host, e.g. /dev/infiniband.")
    container_path: str = Field(description="Device path inside the container.")
    mode: str = Field(default="mrw", description="cgroup permissions: some of m, r, w.")

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        if not isinstance(data, str):
            return data
        parts = data.split(":")
        if len(parts) not in (2, 3) or not all(parts):
            raise config_error(f"device {data!r} must look like host_path:container_path[:mode]")
        out = {"host_path": parts[0], "container_path": parts[1]}
        if len(parts) == 3:
            out["mode"] = parts[2]
        return out
