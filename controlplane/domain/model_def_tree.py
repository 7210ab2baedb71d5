"""An experiment's context directory as Determined's file tree (GetModelDefTree) and one of its
files (GetModelDefFile). Pure: the archive's members in (as `context_archive.read_members`
returns them), nested `FileNode`s out.

As Determined, a directory lists its children; every node carries its full path and its own
name; a file's content type is what its bytes look like (text or binary), a directory's is
empty. Children are ordered directories first, then by name, as the web UI shows them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

TEXT = "text/plain; charset=utf-8"
BINARY = "application/octet-stream"


@dataclass(frozen=True)
class Member:
    path: str  # normalised, "/"-separated, relative
    is_dir: bool
    mtime: int  # seconds since the epoch
    content: bytes


@dataclass
class FileNode:
    path: str
    name: str
    is_dir: bool
    modified_time: datetime
    content_length: int
    content_type: str
    files: list[FileNode] = field(default_factory=list)


def content_type(data: bytes) -> str:
    """Text when the bytes are UTF-8 without NUL (what an editor shows), else binary."""
    if b"\x00" in data:
        return BINARY
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return BINARY
    return TEXT


def _stamp(mtime: int) -> datetime:
    return datetime.fromtimestamp(max(0, mtime), tz=UTC)


def build_tree(members: Iterable[Member]) -> list[FileNode]:
    """The top-level nodes; a directory only implied by a file's path gets a node too."""
    nodes: dict[str, FileNode] = {}
    for m in sorted(members, key=lambda m: m.path):
        _ensure_parents(nodes, m.path, m.mtime)
        if m.is_dir:
            node = nodes.get(m.path) or _dir(m.path, m.mtime)
            node.modified_time = _stamp(m.mtime)
            nodes[m.path] = node
        else:
            nodes[m.path] = FileNode(
                path=m.path,
                name=m.path.rsplit("/", 1)[-1],
                is_dir=False,
                modified_time=_stamp(m.mtime),
                content_length=len(m.content),
                content_type=content_type(m.content),
            )
    roots: list[FileNode] = []
    for path, node in nodes.items():
        parent = path.rsplit("/", 1)[0] if "/" in path else None
        (nodes[parent].files if parent is not None else roots).append(node)
    for node in nodes.values():
        node.files.sort(key=_order)
    return sorted(roots, key=_order)


def _order(node: FileNode) -> tuple[bool, str]:
    return (not node.is_dir, node.name)


def _dir(path: str, mtime: int) -> FileNode:
    return FileNode(
        path=path,
        name=path.rsplit("/", 1)[-1],
        is_dir=True,
        modified_time=_stamp(mtime),
        content_length=0,
        content_type="",
    )


def _ensure_parents(nodes: dict[str, FileNode], path: str, mtime: int) -> None:
    parts = path.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        parent = "/".join(parts[:i])
        if parent not in nodes:
            nodes[parent] = _dir(parent, mtime)


def find_file(members: Iterable[Member], path: str) -> Member | None:
    """The file (not a directory) at `path`, given with or without a leading "./" or "/"."""
    wanted = path.strip()
    while wanted.startswith(("./", "/")):
        wanted = wanted[2:] if wanted.startswith("./") else wanted[1:]
    for m in members:
        if m.path == wanted and not m.is_dir:
            return m
    return None
