"""`det cmd|notebook|shell|tensorboard set priority`: a new priority for a command-like task's job.

The job queue's own rule applies (owner or admin, 1 to 99, back to the submission-time position);
the task's stored config follows, so `det notebook config` shows what the scheduler uses.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import User
from controlplane.domain.command_states import CommandState
from controlplane.domain.errors import InvalidArgument
from controlplane.services import jobs
from controlplane.services.commands import CommandView, get_command
from controlplane.services.pool_catalog import PoolCatalog


async def set_priority(
    session: AsyncSession,
    user: User,
    task_id: str,
    task_type: str,
    priority: int,
    scheduling: PoolCatalog,
) -> CommandView:
    view = await get_command(session, task_id, task_type)
    kind = task_type.lower()
    if view.command.state != CommandState.ACTIVE or view.task.job_id is None:
        raise InvalidArgument(f"{kind} {task_id} has ended; its priority can no longer change")
    change = jobs.QueueChange(job_id=view.task.job_id, priority=priority)
    await jobs.apply_queue_changes(session, user, [change], scheduling)
    config = dict(view.command.config)
    config["resources"] = {**(config.get("resources") or {}), "priority": priority}
    view.command.config = config
    return view
