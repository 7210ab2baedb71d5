"""What an allocation's containers run: image, command, environment and mounts.

Each task type builds its own (trials from their experiment's config, commands from theirs);
the scheduling pass asks for it when it places the task
(`controlplane.services.scheduling.task_spec`). The agent adds its own variables and wraps
``argv`` in the harness launcher. ``files`` are written into the task's run dir (paths relative
to it, e.g. ``info/trial.json``) before the container starts. A module of its own, so that the
task types need not import the scheduling package that calls them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
