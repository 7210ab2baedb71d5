"""Error types shared by every part of the expconf package.

A problem found in an experiment config is a `ConfigIssue`: a dotted key path (list indices
appear as numbers, e.g. ``bind_mounts.0.host_path``), a human message, and the 1-based line of
the YAML source when it is known. `ExperimentConfigError` carries one or more issues.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

LineMap = dict[str, int]
"""Dotted key path -> 1-based line in the YAML source ("" is never a key)."""


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in an experiment config."""

    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.path or "<config>"
        if self.line is not None:
            where = f"{where} (line {self.line})"
        return f"{where}: {self.message}"


class ExperimentConfigError(ValueError):
    """An experiment config (or a template, or an override) is not acceptable."""

    def __init__(self, issues: Iterable[ConfigIssue] | ConfigIssue | str) -> None:
        if isinstance(issues, str):
            found = [ConfigIssue(path="", message=issues)]
        elif isinstance(issues, ConfigIssue):
            found = [issues]
        else:
            found = list(issues)
        if not found:
            found = [ConfigIssue(path="", message="invalid experiment config")]
        self.issues: list[ConfigIssue] = found
        super().__init__(self._render())

    def _render(self) -> str:
        return "\n".join(str(issue) for issue in self.issues)

    def __str__(self) -> str:
        return self._render()


def join_path(parts: Iterable[str | int]) -> str:
    """Join key path parts into the dotted form used by `ConfigIssue.path`."""
    return ".".join(str(part) for part in parts)


def line_for(lines: LineMap | None, path: str) -> int | None:
    """The line of `path`, or of its closest ancestor that has one."""
    if not lines:
        return None
    probe = path
    while probe:
        found = lines.get(probe)
        if found is not None:
            return found
        probe = probe.rpartition(".")[0]
    return None


def issue_at(path: str, message: str, lines: LineMap | None = None) -> ConfigIssue:
    """Build an issue, looking its line up in `lines`."""
    return ConfigIssue(path=path, message=message, line=line_for(lines, path))
