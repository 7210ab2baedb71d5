"""Reading and printing trial and task logs (GET /api/v1/{trials|tasks}/{id}/logs, NDJSON)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from cli.client import ApiClient
from cli.errors import CliError
from cli.render import echo


def _log_id(entry: dict[str, Any]) -> int | None:
    try:
        return int(entry.get("id"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def trial_logs_path(trial_id: int) -> str:
    return f"/api/v1/trials/{trial_id}/logs"


def task_logs_path(task_id: str) -> str:
    return f"/api/v1/tasks/{task_id}/logs"


def trial_log_entries(
    client: ApiClient,
    trial_id: int,
    *,
    follow: bool = False,
    tail: int | None = None,
    head: int | None = None,
    filters: Mapping[str, Any] | None = None,
) -> Iterator[dict[str, Any]]:
    path = trial_logs_path(trial_id)
    return log_entries(client, path, follow=follow, tail=tail, head=head, filters=filters)


def task_log_entries(
    client: ApiClient, task_id: str, *, follow: bool = False, tail: int | None = None
) -> Iterator[dict[str, Any]]:
    return log_entries(client, task_logs_path(task_id), follow=follow, tail=tail)


def log_entries(
    client: ApiClient,
    path: str,
    *,
    follow: bool = False,
    tail: int | None = None,
    head: int | None = None,
    filters: Mapping[str, Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield log entries oldest first, of those `filters` (log_filters.filter_params) pass.

    `head=N` asks for the oldest N (`limit=N`). `tail=N` asks for the newest N
    (`limit=N&orderBy=ORDER_BY_DESC`) and sorts them; with `follow` it then streams from the
    start and skips ids it has already shown.
    """
    base = dict(filters or {})
    if head:
        yield from client.stream(path, {**base, "follow": False, "limit": head})
        return
    if not tail:
        yield from client.stream(path, {**base, "follow": follow})
        return
    recent = list(
        client.stream(path, {**base, "follow": False, "limit": tail, "orderBy": "ORDER_BY_DESC"})
    )
    ids = [_log_id(entry) for entry in recent]
    if all(i is not None for i in ids):
        # Sort rather than reverse, so a master that ignores orderBy still prints oldest first.
        recent.sort(key=_log_id)  # type: ignore[arg-type]
    else:
        recent.reverse()
    yield from recent
    if not follow:
        return
    known = [i for i in ids if i is not None]
    last_id = max(known) if known else None
    for entry in client.stream(path, {**base, "follow": True}):
        entry_id = _log_id(entry)
        if last_id is not None and entry_id is not None and entry_id <= last_id:
            continue
        yield entry


def print_log_entries(entries: Iterable[dict[str, Any]], *, as_json: bool = False) -> int:
    """Print each entry's `message` as-is (it carries its own newline); return the count."""
    count = 0
    for entry in entries:
        count += 1
        if as_json:
            echo(json.dumps(entry))
            continue
        message = entry.get("message")
        if message is None:
            message = entry.get("log") or ""
        echo(str(message), end="" if str(message).endswith("\n") else "\n")
    return count


def print_logs(
    client: ApiClient,
    path: str,
    *,
    follow: bool = False,
    tail: int | None = None,
    as_json: bool = False,
    head: int | None = None,
    filters: Mapping[str, Any] | None = None,
) -> int:
    """What a `det … logs` command does: print the log entries at `path` (`log_entries`) the way
    `print_log_entries` does; return the count."""
    if head and (tail or follow):
        raise CliError("--head cannot be combined with --tail or --follow")
    entries = log_entries(client, path, follow=follow, tail=tail, head=head, filters=filters)
    return print_log_entries(entries, as_json=as_json)
