"""The log filters of Determined 0.38.1's `det … logs` commands (--head, --agent-id,
--container-id, --rank-id, --allocation-id, --timestamp-before/-after, --level, --source,
--stdtype) and the query parameters of GET /api/v1/{trials|tasks}/{id}/logs they become."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

import typer


class Level(StrEnum):
    """Determined's v1LogLevel names, least severe first (`--level` shows this one and above)."""

    TRACE = "TRACE"
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


def levels_at_or_above(level: Level | str | None) -> list[str]:
    """The wire levels (LOG_LEVEL_…) at or above `level`; none for no `--level`."""
    if level is None:
        return []
    names = [lv.value for lv in Level]
    chosen = Level(level).value
    return [f"LOG_LEVEL_{name}" for name in names[names.index(chosen) :]]


def _check_time(value: str | None, flag: str) -> str | None:
    """RFC 3339 with a zone, as the master wants it; refused here with the flag's name."""
    if value is None:
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not an RFC 3339 time, e.g. 2021-10-26T23:17:12Z", param_hint=flag
        ) from None
    if stamp.tzinfo is None:
        raise typer.BadParameter(f"{value!r} needs a zone, e.g. a trailing Z", param_hint=flag)
    return value


def _many(flag: str, what: str) -> Any:
    return typer.Option(flag, help=f"{what} (repeat for several).", show_default=False)


HeadOption = Annotated[
    int | None,
    typer.Option("--head", min=1, help="Only the first N log lines.", show_default=False),
]
AgentIdOption = Annotated[list[str] | None, _many("--agent-id", "Only lines from this agent")]
ContainerIdOption = Annotated[
    list[str] | None, _many("--container-id", "Only lines from this container")
]
RankIdOption = Annotated[list[int] | None, _many("--rank-id", "Only lines from this rank")]
AllocationIdOption = Annotated[
    list[str] | None, _many("--allocation-id", "Only lines from this allocation")
]
SourceOption = Annotated[list[str] | None, _many("--source", "Only lines from this source")]
StdtypeOption = Annotated[
    list[str] | None, _many("--stdtype", "Only lines from this stream (stdout, stderr)")
]
BeforeOption = Annotated[
    str | None,
    typer.Option(
        "--timestamp-before",
        help="Only lines before this time (RFC 3339), e.g. 2021-10-26T23:17:12Z.",
        show_default=False,
    ),
]
AfterOption = Annotated[
    str | None,
    typer.Option(
        "--timestamp-after",
        help="Only lines after this time (RFC 3339), e.g. 2021-10-26T23:17:12Z.",
        show_default=False,
    ),
]
LevelOption = Annotated[
    Level | None,
    typer.Option("--level", help="Only lines of this level or above.", show_default=False),
]


def filter_params(
    *,
    agent_ids: list[str] | None = None,
    container_ids: list[str] | None = None,
    rank_ids: list[int] | None = None,
    allocation_ids: list[str] | None = None,
    sources: list[str] | None = None,
    stdtypes: list[str] | None = None,
    level: Level | str | None = None,
    timestamp_before: str | None = None,
    timestamp_after: str | None = None,
) -> dict[str, Any]:
    """The query parameters for these filters, leaving out the ones not given."""
    params: dict[str, Any] = {
        "agentIds": agent_ids or None,
        "containerIds": container_ids or None,
        "rankIds": rank_ids or None,
        "allocationIds": allocation_ids or None,
        "sources": sources or None,
        "stdtypes": stdtypes or None,
        "levels": levels_at_or_above(level) or None,
        "timestampBefore": _check_time(timestamp_before, "--timestamp-before"),
        "timestampAfter": _check_time(timestamp_after, "--timestamp-after"),
    }
    return {key: value for key, value in params.items() if value is not None}
