"""The labels every runtime puts on a task container, and the ids it accepts (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from agent.protocol import Device, DeviceType
from agent.runtimes.base import LABEL_PREFIX, RunRequest

TYPE_LABEL = f"{LABEL_PREFIX}.type"
ID_LABEL = f"{LABEL_PREFIX}.id"
AGENT_LABEL = f"{LABEL_PREFIX}.agent"
DEVICES_LABEL = f"{LABEL_PREFIX}.devices"
VERSION_LABEL = f"{LABEL_PREFIX}.version"
TASK_CONTAINER = "task-container"

# Container ids become directory names (process) and label values (docker): keep them plain.
_CONTAINER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}$")


def is_valid_container_id(container_id: str) -> bool:
    return bool(_CONTAINER_ID.match(container_id))


def container_labels(request: RunRequest) -> dict[str, str]:
    """The request's own labels plus ours (Determined's names), which always win."""
    return {
        **request.labels,
        TYPE_LABEL: TASK_CONTAINER,
        VERSION_LABEL: "0",
        ID_LABEL: request.container_id,
        AGENT_LABEL: request.agent_id,
        DEVICES_LABEL: ",".join(str(d.id) for d in request.devices),
    }


def is_ours(labels: Mapping[str, str], agent_id: str) -> bool:
    return labels.get(TYPE_LABEL) == TASK_CONTAINER and labels.get(AGENT_LABEL) == agent_id


def cuda_devices(devices: Iterable[Device]) -> list[Device]:
    return [d for d in devices if d.type == DeviceType.CUDA]
