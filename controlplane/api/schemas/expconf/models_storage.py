"""Checkpoint storage configs (reference §5.5), a union keyed on `type`.

Every type carries the checkpoint GC settings: save_experiment_best (0), save_trial_best (1) and
save_trial_latest (1).
"""

from __future__ import annotations

import posixpath
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from .models_base import ConfigModel, config_error, fail_at

STORAGE_TYPES = ("shared_fs", "directory", "s3", "gcs", "azure")


class _StorageBase(ConfigModel):
    save_experiment_best: int = Field(
        default=0, ge=0, description="Keep this many best checkpoints of the whole experiment."
    )
    save_trial_best: int = Field(
        default=1, ge=0, description="Keep this many best checkpoints of each trial."
    )
    save_trial_latest: int = Field(
        default=1, ge=0, description="Keep this many latest checkpoints of each trial."
    )


class SharedFSStorage(_StorageBase):
    """A directory on the agents' hosts, bind-mounted into containers."""

    type: Literal["shared_fs"] = Field(description="Always `shared_fs`.")
    host_path: str = Field(description="Directory on the host (shared by all agents).")
    storage_path: str | None = Field(
        default=None, description="Sub-directory of host_path (relative, or absolute inside it)."
    )
    propagation: str = Field(default="rprivate", description="Bind-mount propagation mode.")
    container_path: str | None = Field(default=None, description="Mount point in containers.")
    checkpoint_path: str | None = Field(default=None, description="Legacy checkpoint path.")
    tensorboard_path: str | None = Field(default=None, description="Legacy TensorBoard path.")

    @model_validator(mode="after")
    def _storage_path_inside_host_path(self) -> SharedFSStorage:
        path = self.storage_path
        if path is None or not posixpath.isabs(path):
            return self
        host = posixpath.normpath(self.host_path)
        inner = posixpath.normpath(path)
        if inner != host and not inner.startswith(host.rstrip("/") + "/"):
            raise fail_at(
                [
                    (
                        ("storage_path",),
                        "storage_path must either be a relative directory or a "
                        "subdirectory of host_path",
                        path,
                    )
                ]
            )
        return self


class DirectoryStorage(_StorageBase):
    """A directory already present inside every container (e.g. a mounted volume)."""

    type: Literal["directory"] = Field(description="Always `directory`.")
    container_path: str = Field(description="Directory inside the container.")


class S3Storage(_StorageBase):
    """An S3 (or S3-compatible) bucket."""

    type: Literal["s3"] = Field(description="Always `s3`.")
    bucket: str = Field(description="Bucket name.")
    access_key: str | None = Field(default=None, description="Access key (default: ambient).")
    secret_key: str | None = Field(default=None, description="Secret key (default: ambient).")
    endpoint_url: str | None = Field(default=None, description="Custom S3 endpoint URL.")
    prefix: str | None = Field(default=None, description="Key prefix inside the bucket.")


class GCSStorage(_StorageBase):
    """A Google Cloud Storage bucket."""

    type: Literal["gcs"] = Field(description="Always `gcs`.")
    bucket: str = Field(description="Bucket name.")
    prefix: str | None = Field(default=None, description="Object prefix inside the bucket.")


class AzureStorage(_StorageBase):
    """An Azure Blob Storage container."""

    type: Literal["azure"] = Field(description="Always `azure`.")
    container: str = Field(description="Blob container name.")
    connection_string: str | None = Field(
        default=None, description="Connection string (exclusive with account_url)."
    )
    account_url: str | None = Field(
        default=None, description="Account URL (exclusive with connection_string)."
    )
    credential: str | None = Field(default=None, description="Credential for account_url.")

    @model_validator(mode="after")
    def _one_way_in(self) -> AzureStorage:
        if (self.connection_string is None) == (self.account_url is None):
            raise config_error("exactly one of connection_string or account_url must be set")
        return self


class _RejectedStorage(ConfigModel):
    """Catches a missing or unknown storage type and reports it at `type`."""

    model_config = ConfigDict(extra="allow")

    type: Any = Field(default=None, validate_default=True, description="The bad type.")

    @field_validator("type")
    @classmethod
    def _reject(cls, value: Any) -> Any:
        expected = ", ".join(STORAGE_TYPES)
        if value is None:
            raise config_error(f"Field required (one of {expected})")
        raise config_error(f"unknown checkpoint storage type {value!r}; expected one of {expected}")


def _storage_kind(value: Any) -> str:
    if isinstance(value, dict):
        kind = value.get("type")
        if isinstance(kind, str) and kind in STORAGE_TYPES:
            return f"<{kind}>"
        return "<rejected>"
    if isinstance(value, _StorageBase):
        return f"<{value.type}>"  # type: ignore[attr-defined]
    return "<rejected>"


CheckpointStorageConfig = Annotated[
    Annotated[SharedFSStorage, Tag("<shared_fs>")]
    | Annotated[DirectoryStorage, Tag("<directory>")]
    | Annotated[S3Storage, Tag("<s3>")]
    | Annotated[GCSStorage, Tag("<gcs>")]
    | Annotated[AzureStorage, Tag("<azure>")]
    | Annotated[_RejectedStorage, Tag("<rejected>")],
    Discriminator(_storage_kind),
]
"""Any checkpoint storage config; the `type` key picks the model."""
