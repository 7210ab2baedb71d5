"""Wire shapes of accelerator reports (Determined's v1AcceleratorData and its requests)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from controlplane.api.schemas.common import Wire

NAME = 256
UUIDS = 1024


class AcceleratorData(Wire):
    container_id: str | None = Field(None, max_length=NAME)
    allocation_id: str | None = Field(None, max_length=NAME)
    node_name: str | None = Field(None, max_length=NAME)
    task_id: str | None = Field(None, max_length=NAME)
    accelerator_type: str | None = Field(None, max_length=64)
    accelerator_uuids: list[Annotated[str, Field(max_length=NAME)]] | None = Field(
        None, max_length=UUIDS
    )
    resource_pool: str | None = Field(None, max_length=NAME)


class PostAllocationAcceleratorDataRequest(Wire):
    allocation_id: str | None = Field(None, max_length=NAME)
    accelerator_data: AcceleratorData


class GetTaskAcceleratorDataResponse(Wire):
    accelerator_data: list[AcceleratorData]
