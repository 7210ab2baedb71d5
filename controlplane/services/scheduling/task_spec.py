"""What an allocation's containers run: image, command, environment and mounts, per task type.

The scheduling pass asks for a task's launch spec when it places the task; each task type builds
its own (trials from their experiment's config, commands from theirs). The agent adds its own
variables and wraps ``argv`` in the harness launcher. ``files`` are written into the task's run
dir (paths relative to it, e.g. ``info/trial.json``) before the container starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from agent.protocol import Mount


@dataclass(frozen=True)
class LaunchSpec:
    image: str
    argv: tuple[str, ...]
    environment: dict[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    shm_size_bytes: int | None = None
    force_pull: bool = False
    files: dict[str, str] = field(default_factory=dict)
    # environment.python: the task's Python ("": the pool's, else the agent's; the agent picks).
    python: str = ""


async def launch_spec(session: AsyncSession, task_id: str, task_type: str) -> LaunchSpec:
    if task_type == "TRIAL":
        from controlplane.services.trial_launch import trial_launch_spec

        return await trial_launch_spec(session, task_id)
    if task_type == "COMMAND":
        from controlplane.services.commands import command_launch_spec

        return await command_launch_spec(session, task_id)
    if task_type in ("NOTEBOOK", "TENSORBOARD", "SHELL"):
        from controlplane.services.interactive_launch import interactive_launch_spec

        return await interactive_launch_spec(session, task_id, task_type)
    raise ValueError(f"task type {task_type!r} cannot be launched")
