"""The launch spec of a task the scheduling pass places, from the module of its task type."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.services.commands import command_launch_spec
from controlplane.services.interactive_launch import interactive_launch_spec
from controlplane.services.launch_spec import LaunchSpec
from controlplane.services.trial_launch import trial_launch_spec


async def launch_spec(session: AsyncSession, task_id: str, task_type: str) -> LaunchSpec:
    if task_type == "TRIAL":
        return await trial_launch_spec(session, task_id)
    if task_type in ("COMMAND", "GENERIC"):
        return await command_launch_spec(session, task_id)
    if task_type in ("NOTEBOOK", "TENSORBOARD", "SHELL"):
        return await interactive_launch_spec(session, task_id, task_type)
    raise ValueError(f"task type {task_type!r} cannot be launched")
