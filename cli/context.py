"""Packing a model-definition (context) directory into the wire's `v1File` list.

Each entry: `{path, type, content, mtime, mode, uid, gid}` with a relative POSIX path,
type 48 (`'0'`, file) or 53 (`'5'`, directory), base64 content ("" for directories), mtime as
an int64 *string* and the full `st_mode`. Directories are listed before the files they hold.
"""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.errors import CliError
from cli.ignore import DEFAULT_IGNORES, IgnoreMatcher

FILE_TYPE = ord("0")
DIR_TYPE = ord("5")
MiB = 1024 * 1024
# Same limit as the real client: 6/8 of 128 MiB of base64 JSON, minus 1 MiB of headroom.
MAX_CONTEXT_SIZE = (128 * MiB // 8) * 6 - MiB  # 99,614,720 decoded bytes
IGNORE_FILE = ".detignore"


@dataclass(frozen=True)
class ContextEntry:
    """One file or directory found under the context root, before its content is read."""

    path: str
    source: Path
    is_dir: bool
    size: int
    mtime: int
    mode: int


def decoded_size(size: int) -> int:
    """Bytes the master counts for a file: base64 length // 4 * 3, as the real client does."""
    return (size + 2) // 3 * 3


def load_ignore(root: Path) -> IgnoreMatcher:
    lines = list(DEFAULT_IGNORES)
    ignore_file = root / IGNORE_FILE
    if ignore_file.is_file():
        try:
            lines += ignore_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"cannot read {ignore_file}: {exc}") from None
    return IgnoreMatcher(lines)


def _stat(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except OSError as exc:
        raise CliError(f"cannot read {path} in the context directory: {exc.strerror}") from None


def _entry(root: Path, source: Path) -> ContextEntry:
    info = _stat(source)
    is_dir = stat.S_ISDIR(info.st_mode)
    return ContextEntry(
        path=source.relative_to(root).as_posix(),
        source=source,
        is_dir=is_dir,
        size=0 if is_dir else info.st_size,
        mtime=int(info.st_mtime),
        mode=info.st_mode,
    )


def scan_context(root: Path) -> list[ContextEntry]:
    """Walk the context directory, honouring `.detignore` and the default ignores."""
    if not root.exists():
        raise CliError(f"context directory {root} does not exist")
    if not root.is_dir():
        raise CliError(f"context path {root} must be a directory")
    matcher = load_ignore(root)
    entries: list[ContextEntry] = []

    def on_error(exc: OSError) -> None:
        raise CliError(f"cannot read the context directory: {exc}")

    for current, dirs, files in os.walk(root, onerror=on_error):
        base = Path(current)
        rel_base = base.relative_to(root).as_posix()
        prefix = "" if rel_base == "." else rel_base + "/"
        dirs[:] = sorted(d for d in dirs if not matcher.is_ignored(prefix + d, is_dir=True))
        entries.extend(_entry(root, base / d) for d in dirs)
        for name in sorted(files):
            rel = prefix + name
            if rel == IGNORE_FILE or matcher.is_ignored(rel):
                continue
            entries.append(_entry(root, base / name))
    return entries


def context_size(entries: list[ContextEntry]) -> int:
    return sum(decoded_size(e.size) for e in entries if not e.is_dir)


def check_size(entries: list[ContextEntry], root: Path, limit: int = MAX_CONTEXT_SIZE) -> int:
    """Refuse a context over the limit before anything is read or sent."""
    total = context_size(entries)
    if total > limit:
        biggest = max((e for e in entries if not e.is_dir), key=lambda e: e.size)
        raise CliError(
            f"context directory {root} is {total / MiB:.1f} MiB, which exceeds the maximum "
            f"allowed size of {limit / MiB:.0f} MiB ({limit:,} bytes); the largest file is "
            f"{biggest.path} ({biggest.size / MiB:.1f} MiB): list big files in {IGNORE_FILE}"
        )
    return total


def to_v1file(entry: ContextEntry, content: bytes) -> dict[str, Any]:
    return {
        "path": entry.path,
        "type": DIR_TYPE if entry.is_dir else FILE_TYPE,
        "content": "" if entry.is_dir else base64.b64encode(content).decode("ascii"),
        "mtime": str(entry.mtime),
        "mode": entry.mode,
        "uid": 0,
        "gid": 0,
    }


def pack_entries(
    entries: list[ContextEntry], on_read: Callable[[int], None] | None = None
) -> list[dict[str, Any]]:
    """Read and encode scanned entries; `on_read(n)` reports the bytes read so far."""
    files = []
    for entry in entries:
        content = b""
        if not entry.is_dir:
            try:
                content = entry.source.read_bytes()
            except OSError as exc:
                raise CliError(f"cannot read {entry.source}: {exc.strerror}") from None
            if on_read is not None:
                on_read(len(content))
        files.append(to_v1file(entry, content))
    return files


def pack_context(root: Path, *, limit: int = MAX_CONTEXT_SIZE) -> list[dict[str, Any]]:
    """Scan, size-check and encode a whole context directory."""
    entries = scan_context(root)
    check_size(entries, root, limit)
    return pack_entries(entries)
