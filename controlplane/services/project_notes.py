"""Project notes, projects by key, and a run-metadata key's values across a project."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Experiment, Project, Trial, User, Workspace
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.services.workspaces import can_change_project, get_project

MAX_NOTES = 100
MAX_TRIALS_READ = 10_000  # metadata values come from at most this many of the newest runs
MAX_VALUES = 1000


async def by_key(session: AsyncSession, key: str) -> Project:
    project = await session.scalar(select(Project).where(Project.key == key).limit(1))
    if project is None:
        raise NotFound(f"project with key '{key}' not found")
    return project


async def _changeable(session: AsyncSession, user: User, project_id: int) -> Project:
    project = await get_project(session, project_id)
    ws = await session.get(Workspace, project.workspace_id)
    assert ws is not None
    can_change_project(user, project, ws)
    return project


def _check(notes: list[dict[str, str]]) -> list[dict[str, str]]:
    if len(notes) > MAX_NOTES:
        raise InvalidArgument(f"a project holds at most {MAX_NOTES} notes")
    for note in notes:
        if "\x00" in note["name"] or "\x00" in note["contents"]:
            raise InvalidArgument("a note may not contain NUL characters")
    return notes


async def add(
    session: AsyncSession, user: User, project_id: int, note: dict[str, str]
) -> list[dict[str, str]]:
    project = await _changeable(session, user, project_id)
    project.notes = _check([*(project.notes or []), note])
    await session.flush()
    return list(project.notes)


async def replace(
    session: AsyncSession, user: User, project_id: int, notes: list[dict[str, str]]
) -> list[dict[str, str]]:
    project = await _changeable(session, user, project_id)
    project.notes = _check(notes)
    await session.flush()
    return list(project.notes)


async def metadata_values(session: AsyncSession, project_id: int, key: str) -> list[str]:
    """The distinct values (as text) of run-metadata `key` ("a.b" for nested keys) among the
    project's newest runs."""
    if not key or "\x00" in key:
        raise InvalidArgument("a metadata key is needed, without NUL")
    rows = await session.scalars(
        select(Trial.run_metadata)
        .join(Experiment, Experiment.id == Trial.experiment_id)
        .where(Experiment.project_id == project_id, Trial.run_metadata.is_not(None))
        .order_by(Trial.id.desc())
        .limit(MAX_TRIALS_READ)
    )
    values: set[str] = set()
    for metadata in rows:
        found = _lookup(metadata, key.split("."))
        if found is not None:
            values.add(found)
            if len(values) >= MAX_VALUES:
                break
    return sorted(values)


def _lookup(metadata: Any, path: list[str]) -> str | None:
    for part in path:
        if not isinstance(metadata, dict) or part not in metadata:
            return None
        metadata = metadata[part]
    if isinstance(metadata, dict | list) or metadata is None:
        return None
    if isinstance(metadata, bool):
        return "true" if metadata else "false"
    return str(metadata)
