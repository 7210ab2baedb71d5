"""Determined 0.38.1's pagination options (`--limit`, `--offset`, `--pages 1|all`) and the
reads they make of a list endpoint that answers `pagination.endIndex`/`total`."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from cli.client import ApiClient, Params

DEFAULT_PAGE = 200  # the real client's --limit default


class Pages(StrEnum):
    one = "1"
    all = "all"


PagesOption = Annotated[
    Pages | None,
    typer.Option(
        "--pages",
        help="all: every page (of --limit items) from --offset on; 1: one page.",
        show_default=False,
    ),
]
OffsetOption = Annotated[int, typer.Option("--offset", min=0, help="Skip this many items first.")]
LimitOption = Annotated[
    int | None,
    typer.Option(
        "--limit",
        min=1,
        help="Items per page (alone: one page of at most N).",
        show_default=False,
    ),
]


def fetch_pages(
    client: ApiClient,
    path: str,
    key: str,
    params: Params | None = None,
    *,
    limit: int | None = None,
    offset: int = 0,
    pages: Pages | str | None = None,
) -> list[Any]:
    """The items `--limit/--offset/--pages` ask for. Without --pages, --limit alone reads one
    page (as our `det` always has); with --pages it is the page size, as in Determined's."""
    query = dict(params or {})
    one = pages == Pages.one or (pages is None and limit is not None)
    if one:
        page = client.get(path, {**query, "offset": offset, "limit": limit or DEFAULT_PAGE})
        return list(page.get(key) or [])
    return client.paginate(path, key, {**query, "offset": offset}, page_size=limit or DEFAULT_PAGE)


def fetch_post_pages(
    client: ApiClient,
    path: str,
    key: str,
    body: dict[str, Any],
    *,
    limit: int | None = None,
    offset: int = 0,
    pages: Pages | str | None = Pages.all,
) -> tuple[list[Any], dict[str, Any]]:
    """The same for a search endpoint that takes `limit`/`offset` in a POST body; also the last
    reply (for its other keys). `limit` None or 0 asks for everything at once."""
    items: list[Any] = []
    while True:
        reply = client.post(path, {**body, "limit": limit or 0, "offset": offset}) or {}
        batch = reply.get(key) or []
        items.extend(batch)
        pagination = reply.get("pagination") or {}
        end, total = pagination.get("endIndex"), pagination.get("total")
        if (
            pages == Pages.one
            or not limit
            or not batch
            or not isinstance(end, int)
            or not isinstance(total, int)
            or end >= total
            or end <= offset
        ):
            return items, reply
        offset = end
