"""What a checkpoint's uuid and the paths in its resources may be.

Storage paths are built from both (`<storage>/<uuid>/<path>`, by the harness that restores a
trial and by whatever deletes checkpoints), so a uuid such as `../../tmp/evil` or a resource such
as `../../etc/passwd` would reach outside the checkpoint. A uuid must be a UUID written the way
`str(uuid.uuid4())` writes it; a path must be relative, normalised (no empty, `.` or `..`
components; a trailing `/` marks a directory), without NUL or backslashes, and not too long.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from controlplane.domain import limits
from controlplane.domain.errors import InvalidArgument

MAX_SIZE = 2**63 - 1  # an int64, as on the Determined wire


def check_uuid(value: str) -> str:
    """`value` if it is a canonical (lowercase, hyphenated) UUID; else InvalidArgument."""
    try:
        canonical = str(uuid.UUID(value))
    except (ValueError, TypeError):
        canonical = None
    if canonical != value:
        raise InvalidArgument(
            f"checkpoint uuid {value[:80]!r} is not a UUID "
            "(lowercase hex, as 0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0)"
        )
    return value


def path_problem(path: str) -> str | None:
    """Why `path` cannot name a file inside a checkpoint, or None when it can."""
    if not path:
        return "is empty"
    if len(path) > limits.PATH_CHARS:
        return f"is {len(path)} characters long; at most {limits.PATH_CHARS} are allowed"
    if "\x00" in path or "\\" in path:
        return "contains NUL or a backslash"
    if path.startswith("/"):
        return "is absolute; paths are relative to the checkpoint"
    parts = path.removesuffix("/").split("/")
    if ".." in parts:
        return "has a '..' component and would leave the checkpoint"
    if "" in parts or "." in parts:
        return "is not normalised (empty or '.' components)"
    return None


def _size(path: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidArgument(f"checkpoint resource {path[:200]!r}: the size must be an integer")
    text = str(value)
    if not text.isdigit() or not text.isascii() or int(text) > MAX_SIZE:
        raise InvalidArgument(
            f"checkpoint resource {path[:200]!r}: the size must be an integer from 0 to {MAX_SIZE}"
        )
    return str(int(text))


def check_resources(resources: Mapping[str, Any]) -> dict[str, str]:
    """The resources as stored ({path: size as decimal text}); InvalidArgument names the first
    path or size that is not allowed."""
    if len(resources) > limits.CHECKPOINT_RESOURCES:
        raise InvalidArgument(
            f"checkpoint resources list {len(resources)} files; "
            f"at most {limits.CHECKPOINT_RESOURCES} are allowed"
        )
    out: dict[str, str] = {}
    for path, size in resources.items():
        problem = path_problem(path)
        if problem is not None:
            raise InvalidArgument(f"checkpoint resource path {path[:200]!r} {problem}")
        out[path] = _size(path, size)
    return out
