"""Agents and slots on the wire: v1Agent, v1Slot, v1Device, v1Container."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from controlplane.api.schemas.common import Pagination, Wire


class DeviceType(StrEnum):
    UNSPECIFIED = "TYPE_UNSPECIFIED"
    CPU = "TYPE_CPU"
    CUDA = "TYPE_CUDA"
    ROCM = "TYPE_ROCM"


class ContainerState(StrEnum):
    UNSPECIFIED = "STATE_UNSPECIFIED"
    ASSIGNED = "STATE_ASSIGNED"
    PULLING = "STATE_PULLING"
    STARTING = "STATE_STARTING"
    RUNNING = "STATE_RUNNING"
    TERMINATED = "STATE_TERMINATED"


class Device(Wire):
    id: int
    brand: str
    uuid: str
    type: DeviceType


class Container(Wire):
    id: str
    parent: str = ""
    state: ContainerState
    devices: list[Device] = []


class Slot(Wire):
    id: str
    device: Device
    enabled: bool
    draining: bool
    container: Container | None = None


class DeviceStats(Wire):
    disabled: int = 0
    draining: int = 0
    allocated: int = 0
    total: int = 0


class SlotStats(Wire):
    type_stats: dict[str, DeviceStats]
    brand_stats: dict[str, DeviceStats]


class Agent(Wire):
    id: str
    registered_time: str | None = None
    slots: dict[str, Slot] = {}
    containers: dict[str, Container] = {}
    resource_pools: list[str] = []
    addresses: list[str] = []
    enabled: bool
    draining: bool
    version: str = ""
    slot_stats: SlotStats
    # Resolute addition: False while the agent is within its reconnect wait.
    connected: bool = True


class GetAgentsResponse(Wire):
    agents: list[Agent]
    pagination: Pagination


class GetAgentResponse(Wire):
    agent: Agent


class DisableAgentRequest(Wire):
    agent_id: str | None = Field(None, max_length=255)
    drain: bool = False


class AgentResponse(Wire):
    agent: Agent


class GetSlotsResponse(Wire):
    slots: list[Slot]


class GetSlotResponse(Wire):
    slot: Slot
