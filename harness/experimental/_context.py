"""An experiment's model directory as the master takes it: Determined's list of files.

``POST /api/v1/experiments`` carries ``modelDefinition``, one entry per file or folder:
``{"path", "type" (48 a file, 53 a folder: the tar type flags '0' and '5'), "content" (base64),
"mode", "mtime", "uid", "gid"}``. ``.detignore`` in the directory names what to leave out
(gitignore-style: ``name`` anywhere, ``/name`` or ``a/b`` from the top, ``dir/`` folders only,
``!pattern`` takes a name back); ``.git`` and ``__pycache__`` are always left out. The whole
must stay under the master's 95 MiB.
"""

from __future__ import annotations

import base64
import fnmatch
import os
from pathlib import Path
from typing import Any

MAX_BYTES = 95 * 1024 * 1024
FILE, FOLDER = 48, 53
ALWAYS_IGNORED = (".git/", "__pycache__/")


class ContextTooLarge(ValueError):
    """The model directory is over the master's limit."""


def _rules(root: Path) -> list[tuple[bool, bool, bool, str]]:
    """(negated, folders only, anchored, pattern) from .detignore and the defaults."""
    lines = list(ALWAYS_IGNORED)
    ignore = root / ".detignore"
    if ignore.is_file():
        lines += ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    rules = []
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[1:] if negated else line
        folders_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        rules.append((negated, folders_only, anchored, line.lstrip("/")))
    return rules


def ignored(rel: str, is_dir: bool, rules: list[tuple[bool, bool, bool, str]]) -> bool:
    """Whether ``rel`` (a POSIX path from the top) is left out; the last matching rule wins."""
    out = False
    name = rel.rsplit("/", 1)[-1]
    for negated, folders_only, anchored, pattern in rules:
        if folders_only and not is_dir:
            continue
        if fnmatch.fnmatchcase(rel if anchored else name, pattern):
            out = not negated
    return out


def _entry(path: str, kind: int, stat: os.stat_result, content: bytes = b"") -> dict[str, Any]:
    return {
        "path": path,
        "type": kind,
        "content": base64.b64encode(content).decode(),
        "mode": stat.st_mode & 0o777,
        "mtime": int(stat.st_mtime),
        "uid": 0,
        "gid": 0,
    }


def _walk(root: Path, prefix: str, out: list[dict[str, Any]], total: list[int]) -> None:
    rules = _rules(root) if root.is_dir() else []
    if root.is_file():
        data = root.read_bytes()
        total[0] += len(data)
        out.append(_entry(prefix or root.name, FILE, root.stat(), data))
        return
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        rel_here = here.relative_to(root).as_posix()
        rel_here = "" if rel_here == "." else rel_here
        keep = []
        for d in sorted(dirs):
            rel = f"{rel_here}/{d}" if rel_here else d
            if not ignored(rel, True, rules):
                keep.append(d)
                out.append(_entry(f"{prefix}{rel}", FOLDER, (here / d).stat()))
        dirs[:] = keep
        for f in sorted(files):
            rel = f"{rel_here}/{f}" if rel_here else f
            path = here / f
            if ignored(rel, False, rules) or not path.is_file():
                continue
            data = path.read_bytes()
            total[0] += len(data)
            if total[0] > MAX_BYTES:
                raise ContextTooLarge(
                    f"the model directory {root} is over {MAX_BYTES // (1024 * 1024)} MiB "
                    "(list what to leave out in .detignore)"
                )
            out.append(_entry(f"{prefix}{rel}", FILE, path.stat(), data))


def model_definition(
    model_dir: str | os.PathLike[str] | None, includes: list[str | os.PathLike[str]] | None = None
) -> list[dict[str, Any]]:
    """The files of ``model_dir`` (none when None), then each of ``includes`` (a file or a
    folder) under its own name at the top."""
    out: list[dict[str, Any]] = []
    total = [0]
    if model_dir is not None:
        _walk(Path(model_dir), "", out, total)
    for extra in includes or []:
        path = Path(extra)
        if path.is_dir():
            out.append(_entry(path.name, FOLDER, path.stat()))
            _walk(path, f"{path.name}/", out, total)
        else:
            _walk(path, path.name, out, total)
    return out
