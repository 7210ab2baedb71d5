"""A notebook reports whether it is idle (Determined's IdleNotebook, sent from inside the
notebook): "not idle" counts as activity for its idle timeout (`notebook_timeout`), as a
proxied request does; "idle" changes nothing (the master's own check decides when it ends)."""

from __future__ import annotations

from typing import Annotated

from litestar import put
from litestar.datastructures import State
from litestar.params import JSONBody, Parameter
from pydantic import Field

from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.schemas.common import Wire
from controlplane.api.schemas.reports import Empty
from controlplane.db.models import Task
from controlplane.domain.errors import InvalidArgument, NotFound, PermissionDenied

NotebookId = Annotated[str, Parameter(max_length=128)]


class IdleNotebookRequest(Wire):
    notebook_id: str | None = Field(default=None, max_length=128)
    idle: bool = False


@put("/api/v1/notebooks/{notebook_id:str}/report_idle")
async def report_idle(
    data: JSONBody[IdleNotebookRequest],
    db: Db,
    principal: Caller,
    ctx: Ctx,
    state: State,
    notebook_id: NotebookId,
) -> Empty:
    if data.notebook_id not in (None, "", notebook_id):
        raise InvalidArgument("body notebookId does not match the path")
    task = await db.get(Task, notebook_id)
    if task is None or task.task_type != "NOTEBOOK":
        raise NotFound(f"notebook {notebook_id} not found")
    if principal.allocation is not None:
        if principal.allocation.task_id != notebook_id:
            raise PermissionDenied("this task's token is not valid for that notebook")
    elif not (principal.user.admin or principal.user.id == task.owner_id):
        raise PermissionDenied(f"only the owner of notebook {notebook_id} or an admin may report")
    if not data.idle and task.end_time is None:
        state["proxy_activity"].touch(notebook_id, ctx.clock())
    return Empty()


ROUTES = [report_idle]
