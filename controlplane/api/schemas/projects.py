"""Project notes and run-metadata values on the wire (Determined's v1Note and friends)."""

from __future__ import annotations

from pydantic import Field

from controlplane.api.schemas.common import Int32, Wire

MAX_NOTE_CHARS = 1 << 20


class Note(Wire):
    name: str = Field(max_length=255)
    contents: str = Field(max_length=MAX_NOTE_CHARS)


class NotesResponse(Wire):
    notes: list[Note]


class PutNotesRequest(Wire):
    notes: list[Note] = Field(max_length=100)
    project_id: Int32 | None = None


class MetadataValuesResponse(Wire):
    values: list[str]
