"""The launch spec of a notebook, TensorBoard or shell: a command's, plus its launcher's settings.

The settings travel as one JSON environment variable (RESOLUTE_INTERACTIVE) that the harness's
interactive launcher reads; the task's base URL under the master's proxy goes with them, since
JupyterLab and TensorBoard must serve their pages under `/proxy/{task id}/`.
"""

from __future__ import annotations

import dataclasses
import json

from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Command
from controlplane.domain.errors import NotFound
from controlplane.domain.proxy_ports import assigned_ports
from controlplane.services.commands import command_launch_spec
from controlplane.services.interactive import SETTINGS_KEY, service_address
from controlplane.services.launch_spec import LaunchSpec

ENV_VAR = "RESOLUTE_INTERACTIVE"


async def interactive_launch_spec(
    session: AsyncSession, task_id: str, task_type: str
) -> LaunchSpec:
    spec = await command_launch_spec(session, task_id)
    cmd = await session.get(Command, task_id)
    if cmd is None:
        raise NotFound(f"{task_type.lower()} {task_id} not found")
    settings = {
        **(cmd.config.get(SETTINGS_KEY) or {}),
        "kind": task_type,
        "base_url": service_address(task_id),
        # The ports its gate or sshd may take: the master accepts no other (api/proxy_address).
        "ports": list(assigned_ports(task_id)),
    }
    env = {**spec.environment, ENV_VAR: json.dumps(settings)}
    return dataclasses.replace(spec, environment=env)
