"""Context directories: wire ``v1File`` lists -> deterministic .tar.gz -> safe extraction.

``parse_wire_files`` validates and decodes the ``files`` of a create request (v1File with a string
mtime, or the legacy dict form with an int one; type 48 file / 53 dir, base64 content);
``pack_context`` makes the tarball the master stores and serves as ``b64Tgz``; ``unpack_context``
extracts one, validating every member before writing anything.  Standard library only; every
refusal raises ``ContextArchiveError`` naming the offending path and the rule it broke.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gzip
import io
import os
import re
import stat
import tarfile
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_CONTEXT_BYTES = 99_614_720  # (128 MiB // 8) * 6 - 1 MiB, the det CLI's MAX_CONTEXT_SIZE
MAX_ENTRIES = 100_000
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
TYPE_FILE = 48  # ord(tarfile.REGTYPE)
TYPE_DIR = 53  # ord(tarfile.DIRTYPE)
RATIO_MIN_BYTES = 1 << 20  # the compression-ratio check applies past 1 MiB decompressed

_TYPE_NAMES = {
    "0": TYPE_FILE, "48": TYPE_FILE, "file": TYPE_FILE, "regular": TYPE_FILE, "reg": TYPE_FILE,
    "5": TYPE_DIR, "53": TYPE_DIR, "dir": TYPE_DIR, "directory": TYPE_DIR,
}  # fmt: skip
_LINK_TYPES = {ord("1"): "hard link", ord("2"): "symbolic link"}
_SPECIAL_TYPES = {ord("3"): "character device", ord("4"): "block device", ord("6"): "fifo"}
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x01-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class ContextArchiveError(ValueError):
    """A context file list or archive was refused; ``path`` and ``rule`` say which and why."""

    def __init__(self, rule: str, path: str | None = None, *, what: str = "context file") -> None:
        self.rule = rule
        self.path = path
        super().__init__(f"{what} {path!r}: {rule}" if path is not None else f"{what}: {rule}")


@dataclass(frozen=True)
class ContextFile:
    """One validated context entry; ``path`` is normalised, ``type`` is 48 (file) or 53 (dir)."""

    path: str
    type: int
    content: bytes = b""
    mtime: int = 0
    mode: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", normalise_path(self.path))
        object.__setattr__(self, "type", _coerce_type(self.type, self.path))
        if not isinstance(self.content, bytes | bytearray | memoryview):
            raise ContextArchiveError("content must be bytes", self.path)
        object.__setattr__(self, "content", bytes(self.content))
        if self.type == TYPE_DIR and self.content:
            raise ContextArchiveError("a directory entry must have empty content", self.path)
        object.__setattr__(self, "mtime", _coerce_uint(self.mtime, "mtime", self.path, 63))
        object.__setattr__(self, "mode", _coerce_uint(self.mode, "mode", self.path, 32))
        _check_mode(self.mode, self.type, self.path)

    @property
    def is_dir(self) -> bool:
        return self.type == TYPE_DIR


def normalise_path(path: Any, *, what: str = "context file") -> str:
    """Return the canonical relative POSIX form of ``path`` or raise ContextArchiveError."""
    if not isinstance(path, str):
        raise ContextArchiveError(f"path must be a string, got {type(path).__name__}", what=what)
    raw = path.encode("utf-8", "surrogatepass")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    for broken, rule in (
        ("\x00" in path, "path contains a NUL byte"),
        (_CONTROL.search(path), "path contains a control character"),
        ("\\" in path, "path contains a backslash (Windows separator)"),
        (_DRIVE.match(path), "path starts with a Windows drive letter"),
        (path.startswith("/"), "path is absolute"),
        (_SURROGATE.search(path), "path is not valid UTF-8"),
        (len(raw) > MAX_PATH_BYTES, f"path is longer than {MAX_PATH_BYTES} bytes"),
        (".." in parts, "path escapes the context directory"),
        (not parts, "path is empty"),
        (any(len(p.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for p in parts),
         f"a path component exceeds {MAX_NAME_BYTES} bytes"),
    ):  # fmt: skip
        if broken:
            raise ContextArchiveError(rule, path, what=what)
    return "/".join(parts)


def _coerce_type(value: Any, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        code = value
    elif isinstance(value, str) and value.strip().lower() in _TYPE_NAMES:
        return _TYPE_NAMES[value.strip().lower()]
    elif isinstance(value, str) and len(value) == 1:
        code = ord(value)
    else:
        raise ContextArchiveError(f"unsupported entry type {value!r}", path)
    if code in (TYPE_FILE, TYPE_DIR):
        return code
    if code in _LINK_TYPES:
        raise ContextArchiveError(f"{_LINK_TYPES[code]} entries are not allowed", path)
    if code in _SPECIAL_TYPES:
        raise ContextArchiveError(f"{_SPECIAL_TYPES[code]} entries are not allowed", path)
    raise ContextArchiveError(f"unsupported entry type {value!r} (only file 48 / dir 53)", path)


def _coerce_uint(value: Any, field: str, path: str, bits: int) -> int:
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,20}", value.strip()):
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool):
        raise ContextArchiveError(f"{field} must be an integer, got {value!r}", path)
    if value < 0:
        raise ContextArchiveError(f"{field} must not be negative, got {value}", path)
    if value >= 1 << bits:
        raise ContextArchiveError(f"{field} is out of range, got {value}", path)
    return value


def _check_mode(mode: int, type_: int, path: str) -> None:
    fmt = stat.S_IFMT(mode)
    if fmt in (0, stat.S_IFREG if type_ == TYPE_FILE else stat.S_IFDIR):
        return
    kinds = {stat.S_IFLNK: "a symbolic link", stat.S_IFCHR: "a character device",
             stat.S_IFBLK: "a block device", stat.S_IFIFO: "a fifo", stat.S_IFSOCK: "a socket",
             stat.S_IFREG: "a regular file", stat.S_IFDIR: "a directory"}  # fmt: skip
    kind = kinds.get(fmt, f"an unknown file type {fmt:#o}")
    raise ContextArchiveError(f"mode {mode:#o} says {kind}, which does not match the type", path)


def stored_mode(mode: int, is_dir: bool) -> int:
    """Permissions kept in the archive: 0o755 for dirs and executables, otherwise 0o644."""
    return 0o755 if is_dir or (mode & 0o7777) & 0o111 else 0o644


def files_total_size(files: list[ContextFile]) -> int:
    """Total decoded content size in bytes (directories count 0)."""
    return sum(len(f.content) for f in files)


def _size_error(path: str | None, limit: int) -> ContextArchiveError:
    return ContextArchiveError(
        f"total decoded content exceeds the maximum allowed size of {limit} bytes", path
    )


def _decode_content(raw: Any, path: str, total: int, limit: int) -> bytes:
    if raw is None:
        return b""
    if not isinstance(raw, str):
        raise ContextArchiveError(
            f"content must be a base64 string, got {type(raw).__name__}", path
        )
    pad = len(raw) - len(raw.rstrip("="))
    if total + max(0, len(raw) // 4 * 3 - min(pad, 2)) > limit:  # before decoding anything
        raise _size_error(path, limit)
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ContextArchiveError(f"content is not valid base64 ({exc})", path) from None
    if total + len(data) > limit:
        raise _size_error(path, limit)
    return data


def parse_wire_files(
    items: list[dict[str, Any]], *, max_total_bytes: int | None = None
) -> list[ContextFile]:
    """Validate and decode the ``files`` of a create request (v1File or legacy dict form)."""
    limit = MAX_CONTEXT_BYTES if max_total_bytes is None else max_total_bytes
    if items is None:
        return []
    if not isinstance(items, list | tuple):
        raise ContextArchiveError(
            f"files must be a list, got {type(items).__name__}", what="context"
        )
    _check_count(len(items))
    files: list[ContextFile] = []
    total = 0
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            rule = f"entry must be an object, got {type(item).__name__}"
            raise ContextArchiveError(rule, what=f"context file #{index}")
        if "path" not in item:
            raise ContextArchiveError("entry has no 'path'", what=f"context file #{index}")
        raw_path = item["path"]
        if not isinstance(raw_path, str):
            rule = f"path must be a string, got {type(raw_path).__name__}"
            raise ContextArchiveError(rule, what=f"context file #{index}")
        path = normalise_path(raw_path)
        type_value = item.get("type")
        if type_value is None:  # proto3 JSON may omit it; fall back to the mode
            mode_hint = item.get("mode")
            is_dir = isinstance(mode_hint, int) and stat.S_ISDIR(mode_hint)
            type_value = TYPE_DIR if is_dir else TYPE_FILE
        type_code = _coerce_type(type_value, raw_path)
        content = _decode_content(item.get("content"), raw_path, total, limit)
        total += len(content)
        mtime = item.get("mtime", 0)
        mode = item.get("mode", 0)
        files.append(ContextFile(path, type_code, content, 0 if mtime is None else mtime,
                                 0 if mode is None else mode))  # fmt: skip
    check_file_set(files, max_total_bytes=limit)
    return files


def _check_count(count: int, limit: int | None = None, what: str = "context") -> None:
    limit = MAX_ENTRIES if limit is None else limit
    if count > limit:
        raise ContextArchiveError(f"too many entries ({count} > {limit})", what=what)


def _check_tree(entries: dict[str, bool], what: str) -> None:
    """``entries`` maps normalised path -> is_dir; refuse paths nested under a file."""
    for path in entries:
        parent = path
        while "/" in parent:
            parent = parent.rsplit("/", 1)[0]
            if entries.get(parent) is False:
                raise ContextArchiveError(f"parent {parent!r} is a file", path, what=what)


def check_file_set(files: list[ContextFile], *, max_total_bytes: int | None = None) -> None:
    """Set-level rules: entry count, duplicate paths, nesting under a file, total size."""
    limit = MAX_CONTEXT_BYTES if max_total_bytes is None else max_total_bytes
    _check_count(len(files))
    entries: dict[str, bool] = {}
    total = 0
    for f in files:
        if f.path in entries:
            raise ContextArchiveError("duplicate path", f.path)
        entries[f.path] = f.is_dir
        total += len(f.content)
        if total > limit:
            raise _size_error(f.path, limit)
    _check_tree(entries, "context file")


def pack_context(files: list[ContextFile]) -> bytes:
    """Deterministic .tar.gz of ``files``: sorted, uid/gid 0, normalised modes, mtimes kept."""
    check_file_set(files)
    buf = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as gz,
        tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        for f in sorted(files, key=lambda f: f.path):
            info = tarfile.TarInfo(f.path)
            info.type = tarfile.DIRTYPE if f.is_dir else tarfile.REGTYPE
            info.mode = stored_mode(f.mode, f.is_dir)
            info.mtime = f.mtime
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.size = 0 if f.is_dir else len(f.content)
            tar.addfile(info, None if f.is_dir else io.BytesIO(f.content))
    return buf.getvalue()


class _BoundedGunzip(io.RawIOBase):
    """Gunzip reader that refuses to yield more than ``limit`` bytes or exceed ``max_ratio``.

    It remembers its last few chunks so the caller can look at the block where tarfile stopped.
    """

    def __init__(self, data: bytes, limit: int, max_ratio: float) -> None:
        self._gz = gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb")
        self._compressed = max(1, len(data))
        self._limit = limit
        self._ratio = max_ratio
        self._recent: deque[tuple[int, bytes]] = deque(maxlen=64)
        self.produced = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        want = min(len(buffer), self._limit + 1 - self.produced)
        chunk = self._gz.read(max(want, 1))
        self._recent.append((self.produced, chunk))
        self.produced += len(chunk)
        if self.produced > self._limit:
            rule = f"decompressed stream exceeds {self._limit} bytes (decompression bomb?)"
            raise ContextArchiveError(rule, what="context archive")
        if self.produced > RATIO_MIN_BYTES and self.produced > self._ratio * self._compressed:
            rule = f"compression ratio exceeds {self._ratio} (decompression bomb?)"
            raise ContextArchiveError(rule, what="context archive")
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def recent_block(self, offset: int) -> bytes:
        """The (up to) 512 bytes at ``offset`` if still remembered, else b""."""
        if not self._recent or offset < self._recent[0][0]:
            return b""
        start = self._recent[0][0]
        joined = b"".join(chunk for _, chunk in self._recent)
        return joined[offset - start : offset - start + tarfile.BLOCKSIZE]


def _member_type(info: tarfile.TarInfo, name: str) -> bool:
    """True for a directory, False for a regular file; refuse anything else."""
    if info.type in (tarfile.REGTYPE, tarfile.AREGTYPE):
        return False
    if info.type == tarfile.DIRTYPE:
        return True
    code = info.type[0] if info.type else 0
    if code in _LINK_TYPES:
        rule = f"{_LINK_TYPES[code]} members are not allowed (all links are refused)"
    elif code in _SPECIAL_TYPES:
        rule = f"{_SPECIAL_TYPES[code]} members are not allowed"
    else:
        rule = f"unsupported member type {info.type!r}"
    raise ContextArchiveError(rule, name, what="archive member")


def _read_members(
    tgz: bytes, max_total_bytes: int, max_members: int, max_ratio: float
) -> list[tuple[str, bool, int, int, bytes]]:
    """Read and validate every member into memory: (path, is_dir, mode, mtime, content)."""
    overhead = 1024 * (max_members + 1) + (1 << 20)  # headers, padding, long names, end blocks
    stream = _BoundedGunzip(tgz, max_total_bytes + overhead, max_ratio)
    members: list[tuple[str, bool, int, int, bytes]] = []
    seen: dict[str, bool] = {}
    declared = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for count, info in enumerate(tar, 1):
                _check_count(count, max_members, "context archive")
                is_dir = _member_type(info, info.name)
                if is_dir and info.name in (".", "./"):  # `tar -C ctx .` style root entry
                    continue
                path = normalise_path(info.name, what="archive member")
                if hasattr(tarfile, "data_filter"):  # extra defence only (3.11.4+)
                    try:
                        tarfile.data_filter(info, "/nonexistent-dest")
                    except tarfile.FilterError as exc:
                        rule = f"refused by tarfile.data_filter ({exc})"
                        raise ContextArchiveError(rule, info.name, what="archive member") from None
                if path in seen:
                    raise ContextArchiveError("duplicate member", info.name, what="archive member")
                seen[path] = is_dir
                declared += info.size
                if declared > max_total_bytes:
                    rule = f"declared total size exceeds {max_total_bytes} bytes"
                    raise ContextArchiveError(rule, info.name, what="archive member")
                data = b""
                if not is_dir:
                    extracted = tar.extractfile(info)
                    data = extracted.read() if extracted is not None else b""
                    if len(data) != info.size:
                        raise ContextArchiveError("member data is truncated", info.name,
                                                  what="archive member")  # fmt: skip
                mtime = int(info.mtime) if isinstance(info.mtime, int | float) else 0
                members.append((path, is_dir, info.mode, max(0, mtime), data))
            # tarfile silently stops at a bad or missing header: demand the zero end block
            if stream.recent_block(tar.offset) != bytes(tarfile.BLOCKSIZE):
                rule = "no end-of-archive marker after the last member (corrupt or truncated)"
                raise ContextArchiveError(rule, what="context archive")
        while stream.read(1 << 16):  # drain: verifies the gzip CRC/length, bounded by the limit
            pass
    except ContextArchiveError:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error, ValueError) as exc:
        rule = f"corrupt or truncated archive ({type(exc).__name__}: {exc})"
        raise ContextArchiveError(rule, what="context archive") from None
    _check_tree(seen, "archive member")
    return members


def read_members(
    tgz: bytes,
    *,
    max_total_bytes: int = MAX_CONTEXT_BYTES,
    max_members: int = MAX_ENTRIES,
    max_ratio: float = 200,
) -> list[tuple[str, bool, int, int, bytes]]:
    """Every member of a stored context, validated as `unpack_context` does, read into memory
    without writing anything: (path, is_dir, mode, mtime, content). Empty `tgz`: none."""
    return _read_members(bytes(tgz), max_total_bytes, max_members, max_ratio) if tgz else []


def _check_destination(root: Path, members: list[tuple[str, bool, int, int, bytes]]) -> None:
    """Refuse if anything already under ``root`` would redirect or block a write."""
    for path, is_dir, *_ in members:
        current = root
        parts = path.split("/")
        for i, part in enumerate(parts):
            current = current / part
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                break
            last = i == len(parts) - 1
            if stat.S_ISLNK(st.st_mode):
                rule = f"destination {str(current)!r} is a symbolic link"
                raise ContextArchiveError(rule, path, what="archive member")
            wants_dir = is_dir or not last
            if wants_dir != stat.S_ISDIR(st.st_mode):
                kind = "directory" if wants_dir else "file"
                rule = f"destination {str(current)!r} exists and is not a {kind}"
                raise ContextArchiveError(rule, path, what="archive member")


def unpack_context(
    tgz: bytes,
    dest: Path,
    *,
    max_total_bytes: int = MAX_CONTEXT_BYTES,
    max_members: int = 100_000,
    max_ratio: float = 200,
) -> list[str]:
    """Safely extract a context .tar.gz into ``dest``; returns the sorted member paths.

    Every member is validated (and its data read, bounded) before anything is written; links of
    any kind, devices, fifos, absolute or escaping names, duplicates and bombs are refused.  An
    empty ``tgz`` (the wire's ``b64Tgz: ""``) is an empty context.
    """
    if not isinstance(tgz, bytes | bytearray | memoryview):
        raise ContextArchiveError("archive must be bytes", what="context archive")
    members = _read_members(bytes(tgz), max_total_bytes, max_members, max_ratio) if tgz else []
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise ContextArchiveError("destination is not a directory", str(dest), what="context")
    created: list[Path] = []
    try:
        if not dest.exists():
            dest.mkdir(parents=True)
            created.append(dest)
        root = dest.resolve()
        _check_destination(root, members)
        dirs: list[tuple[Path, int]] = []
        for path, is_dir, mode, mtime, data in sorted(members):
            target = root.joinpath(*path.split("/"))
            for parent in reversed(target.parents):  # create missing parents, remember them
                if root in parent.parents and not parent.exists():
                    parent.mkdir(mode=0o755)
                    created.append(parent)
            if is_dir:
                if not target.exists():
                    target.mkdir(mode=0o755)
                    created.append(target)
                dirs.append((target, mtime))
                continue
            existed = target.exists()
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(target, flags, 0o600)
            if not existed:
                created.append(target)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(target, stored_mode(mode, False))
            _set_mtime(target, mtime)
        for target, mtime in dirs:  # after the files, which would bump the mtimes
            os.chmod(target, 0o755)
            _set_mtime(target, mtime)
    except BaseException as exc:
        for path in reversed(created):
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
        if isinstance(exc, OSError):
            raise ContextArchiveError(f"extraction failed ({exc})", what="context") from exc
        raise
    return sorted(m[0] for m in members)


def _set_mtime(path: Path, mtime: int) -> None:
    with contextlib.suppress(OSError, OverflowError, ValueError):
        os.utime(path, (mtime, mtime), follow_symlinks=False)
