"""The two pages `det notebook|tensorboard start` prints and opens, until the web UI has its own:
`/det/interactive/{id}/{type}/{description}/{pool}/{wait page}` and `/det/wait/{type}/{id}`.

Both are static: both send the browser on to the task's service address (`/proxy/{id}/`), where the
proxy asks for credentials (the `auth` cookie of the web UI, or a bearer token).
"""

from __future__ import annotations

import html
import uuid
from typing import Annotated

from litestar import MediaType, Request, Response, get
from litestar.params import Parameter

from controlplane.api.proxy import PREFIX
from controlplane.domain.errors import InvalidArgument

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta http-equiv="refresh" content="0; url={target}"></head>
<body><p>{title}: <a href="{target}">continue to {target}</a></p></body></html>
"""


def _task_id(segment: str) -> str:
    """Notebooks, TensorBoards and shells have UUIDs: anything else is a bad link (a 400 that
    says so), never a page that sends the browser somewhere made up."""
    try:
        parsed = uuid.UUID(segment)
    except ValueError:
        parsed = None
    if parsed is None or str(parsed) != segment.lower():
        raise InvalidArgument(f"{segment[:64]!r} is not the id of a notebook, TensorBoard or shell")
    return str(parsed)


def _page(title: str, target: str) -> Response[str]:
    # Only our own proxy paths are followed: the query string is the caller's to write.
    if not target.startswith(PREFIX) and not target.startswith("/det/wait/"):
        target = "/det/"
    body = _PAGE.format(title=html.escape(title), target=html.escape(target, quote=True))
    return Response(body, media_type=MediaType.HTML)


@get("/det/interactive/{rest:path}", media_type=MediaType.HTML)
async def interactive_page(rest: Annotated[str, Parameter()]) -> Response[str]:
    """Straight on to the service: the wait page it names (quoted, with its own query) adds
    nothing once the client has already waited for readiness."""
    task_id = _task_id(rest.strip("/").split("/", 1)[0])
    return _page("Opening the task", f"{PREFIX}{task_id}/")


@get("/det/wait/{rest:path}", media_type=MediaType.HTML)
async def wait_page(request: Request, rest: Annotated[str, Parameter()]) -> Response[str]:
    parts = rest.strip("/").split("/")
    if len(parts) < 2:
        raise InvalidArgument("a wait page is /det/wait/{task type}/{task id}")
    task_id = _task_id(parts[1])
    target = request.query_params.get("serviceAddr") or f"{PREFIX}{task_id}/"
    return _page("Waiting for the task", target)


ROUTES = [interactive_page, wait_page]
