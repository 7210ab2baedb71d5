"""`.detignore` matching with gitignore ("gitwildmatch") semantics.

`pathspec` is used when it is installed. It is not a dependency of this project, so a small
built-in translator covers the common subset: `#` comments, `!` negation, trailing `/` for
directories only, leading or inner `/` anchoring at the context root, `*`, `?`, `[...]`, and
`**` (leading, inner and trailing). It does not implement backslash escapes other than `\\#`,
`\\!` and an escaped trailing space.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

try:  # optional: exact gitwildmatch semantics
    import pathspec as _pathspec
except ImportError:  # pragma: no cover - depends on the environment
    _pathspec = None

DEFAULT_IGNORES = (
    "__pycache__/",
    "*.py[co]",
    "*$py.class",
    "terraform*",
    ".terraform*",
    ".git/",
    ".vscode/",
    ".idea/",
    ".mypy_cache/",
    "/shared_fs",
)


@dataclass(frozen=True)
class Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _translate_segment(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = segment[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def parse_rule(line: str) -> Rule | None:
    """Compile one `.detignore` line; None for blanks and comments."""
    text = line.rstrip("\n\r")
    text = text[:-2] + " " if text.endswith("\\ ") else text.rstrip(" ")
    if not text or text.startswith("#"):
        return None
    negate = text.startswith("!")
    if negate or text.startswith(("\\!", "\\#")):  # drop "!" or the escaping backslash
        text = text[1:]
    dir_only = text.endswith("/")
    text = text.rstrip("/")
    if not text:
        return None
    anchored = "/" in text
    text = text.lstrip("/")
    segments = text.split("/")
    if segments[0] == "**":
        anchored = False
        segments = segments[1:] or ["**"]
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_translate_segment(segment) + ("" if last else "/"))
    prefix = "^" if anchored else "^(?:.*/)?"
    return Rule(re.compile(prefix + "".join(parts) + "$"), negate, dir_only)


class IgnoreMatcher:
    """Decides which paths (relative POSIX, no leading `./`) are left out of a context."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = [line.rstrip("\n\r") for line in lines]
        self._spec = (
            _pathspec.PathSpec.from_lines("gitwildmatch", self.lines) if _pathspec else None
        )
        self._rules = [r for r in map(parse_rule, self.lines) if r is not None]

    @property
    def uses_pathspec(self) -> bool:
        return self._spec is not None

    def _matches_self(self, path: str, is_dir: bool) -> bool:
        if self._spec is not None:
            return bool(self._spec.match_file(path + "/" if is_dir else path))
        ignored = False
        for rule in self._rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(path):
                ignored = not rule.negate
        return ignored

    def is_ignored(self, path: str, is_dir: bool = False) -> bool:
        """True if the path, or any directory above it, is ignored."""
        parts = path.split("/")
        for depth in range(1, len(parts)):
            if self._matches_self("/".join(parts[:depth]), True):
                return True
        return self._matches_self(path, is_dir)
