"""Download the task's context directory (the experiment's model definition) and unpack it.

``GET /api/v1/tasks/{task}/context_directory`` answers ``{"b64Tgz": ...}``: a base64 .tar.gz,
empty when the task has none. Every member is checked before it is written: no absolute
paths, no ``..``, no links that lead outside the destination, no devices or fifos. Python's
``tarfile`` data filter arrived in 3.11.4 and task images may have an older Python, so the
checks are done here.
"""

from __future__ import annotations

import base64
import io
import os
import posixpath
import tarfile
from pathlib import Path

from harness._session import Transport

MAX_MEMBERS = 100_000


class UnsafeArchive(ValueError):
    """A member that would land outside the destination, or is not a file, dir or safe link."""


def _clean_name(name: str) -> str:
    if "\x00" in name:
        raise UnsafeArchive(f"{name!r}: NUL in a path")
    norm = posixpath.normpath(name.replace("\\", "/"))
    if norm.startswith("/") or norm == ".." or norm.startswith("../"):
        raise UnsafeArchive(f"{name!r}: leads outside the context directory")
    return norm


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _target(dest: str, rel: str) -> str:
    """The member's absolute path; refuses a path whose existing parents lead elsewhere."""
    full = os.path.join(dest, *rel.split("/"))
    parent = os.path.realpath(os.path.dirname(full))
    if not _inside(dest, parent):
        raise UnsafeArchive(f"{rel!r}: a parent directory is a link outside the context")
    return full


def _check_link(rel: str, link: str) -> None:
    if posixpath.isabs(link):
        raise UnsafeArchive(f"{rel!r}: absolute link target {link!r}")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), link))
    if resolved == ".." or resolved.startswith("../"):
        raise UnsafeArchive(f"{rel!r}: link target {link!r} is outside the context")


def _write_file(tar: tarfile.TarFile, member: tarfile.TarInfo, full: str) -> None:
    src = tar.extractfile(member)
    assert src is not None
    if os.path.islink(full) or os.path.isdir(full):
        raise UnsafeArchive(f"{member.name!r}: would replace a link or directory")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    mode = 0o755 if member.mode & 0o111 else 0o644
    fd = os.open(full, flags, mode)
    with os.fdopen(fd, "wb") as out:
        while chunk := src.read(1 << 20):
            out.write(chunk)
    os.chmod(full, mode)


def unpack(archive: bytes, dest: Path) -> int:
    """Extract a .tar.gz into ``dest`` (created if needed); returns the number of members."""
    dest.mkdir(parents=True, exist_ok=True)
    root = os.path.realpath(dest)
    count = 0
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
        for member in tar:
            count += 1
            if count > MAX_MEMBERS:
                raise UnsafeArchive(f"more than {MAX_MEMBERS} members")
            rel = _clean_name(member.name)
            if rel == ".":
                continue
            full = _target(root, rel)
            if member.isdir():
                os.makedirs(full, exist_ok=True)
                if not _inside(root, os.path.realpath(full)):
                    raise UnsafeArchive(f"{member.name!r}: is a link outside the context")
            elif member.isreg():
                os.makedirs(os.path.dirname(full), exist_ok=True)
                _write_file(tar, member, full)
            elif member.issym():
                _check_link(rel, member.linkname)
                if os.path.lexists(full):
                    os.remove(full)
                os.symlink(member.linkname, full)
                # The lexical check cannot see links among the parents: resolve it for real.
                if not _inside(root, os.path.realpath(full)):
                    os.remove(full)
                    raise UnsafeArchive(f"{member.name!r}: link resolves outside the context")
            else:
                raise UnsafeArchive(f"{member.name!r}: links, devices and fifos are not allowed")
    return count


def download(transport: Transport, task_id: str, dest: Path) -> int:
    """Fetch and unpack the task's context directory; returns the number of members."""
    answer = transport.request("GET", f"/api/v1/tasks/{task_id}/context_directory") or {}
    encoded = answer.get("b64Tgz") or answer.get("b64_tgz") or ""
    if not encoded:
        return 0
    return unpack(base64.b64decode(encoded), dest)
