"""Parse experiment-config YAML into plain Python data plus a key-path -> line map.

The round-trip loader of ruamel.yaml keeps line numbers and rejects duplicate keys. It also keeps
YAML aliases as shared references, so loading itself cannot blow up; the conversion to plain
data below is where aliases get expanded, and it runs under node, size and depth budgets so
that a "billion laughs" document is rejected instead of eating the master's memory.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedSet, TaggedScalar
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.scalarbool import ScalarBoolean

from .errors import ConfigIssue, ExperimentConfigError, LineMap, join_path

MAX_CONFIG_BYTES = 1024 * 1024
"""Largest config text accepted (1 MiB)."""

MAX_NODES = 100_000
"""Most scalars, lists and maps a config may hold once aliases are expanded."""

MAX_EXPANDED_CHARS = 8 * 1024 * 1024
"""Most characters of keys and strings a config may hold once aliases are expanded."""

MAX_DEPTH = 64
"""Deepest nesting of lists and maps accepted."""


class _Budget:
    """Counts what the conversion produced, so alias expansion stays bounded."""

    def __init__(self) -> None:
        self.nodes = 0
        self.chars = 0

    def spend(self, nodes: int, chars: int, path: list[str | int], line: int | None) -> None:
        self.nodes += nodes
        self.chars += chars
        if self.nodes > MAX_NODES or self.chars > MAX_EXPANDED_CHARS:
            raise ExperimentConfigError(
                ConfigIssue(
                    path=join_path(path),
                    message=(
                        "config is too large once YAML aliases are expanded "
                        f"(limits: {MAX_NODES} nodes, {MAX_EXPANDED_CHARS} characters)"
                    ),
                    line=line,
                )
            )


def _yaml_error(exc: YAMLError, text: str) -> ExperimentConfigError:
    if isinstance(exc, DuplicateKeyError):
        return _duplicate_key_error(exc, text)
    if isinstance(exc, MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        parts = [part for part in (exc.context, exc.problem) if part]
        message = "; ".join(str(part) for part in parts) or "invalid YAML"
        return ExperimentConfigError(ConfigIssue(path="", message=message, line=line))
    return ExperimentConfigError(ConfigIssue(path="", message=f"invalid YAML: {exc}"))


def _duplicate_key_error(exc: DuplicateKeyError, text: str) -> ExperimentConfigError:
    """Name the duplicated key by its path, found by re-reading with duplicates allowed."""
    found = re.search(r'duplicate key "(.*?)" with value', str(exc.problem))
    key = found.group(1) if found else "?"
    line = exc.problem_mark.line + 1 if exc.problem_mark is not None else None
    first = exc.context_mark.line + 1 if exc.context_mark is not None else None
    path = ""
    if line is not None and first is not None:
        lenient = YAML(typ="rt")
        lenient.allow_duplicate_keys = True
        try:
            lines = _Converter().run(lenient.load(text))
        except (YAMLError, ExperimentConfigError, RecursionError):
            lines = {}
        best = 0
        for candidate, at in lines.items():
            named = candidate == key or candidate.endswith("." + key)
            if named and first <= at <= line and at > best:
                path, best = candidate, at
    message = f"duplicate key {key!r}"
    return ExperimentConfigError(ConfigIssue(path=path, message=message, line=line))


def _line_of(node: Any, key: Any) -> int | None:
    """1-based line of a mapping key or list index, from ruamel's position records."""
    info = getattr(node, "lc", None)
    data = getattr(info, "data", None) if info is not None else None
    if not isinstance(data, dict):
        return None
    found = data.get(key)
    return found[0] + 1 if found else None


def _plain_key(key: Any, path: list[str | int], line: int | None) -> str:
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bool | ScalarBoolean):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(int(key))
    if isinstance(key, float):
        return repr(float(key))
    raise ExperimentConfigError(
        ConfigIssue(
            path=join_path(path),
            message=f"mapping keys must be strings or numbers, got {key!r}",
            line=line,
        )
    )


class _Converter:
    def __init__(self) -> None:
        self.budget = _Budget()
        self.lines: LineMap = {}
        self.active: set[int] = set()

    def run(self, document: Any) -> LineMap:
        self.convert(document, [], 1)
        return self.lines

    def scalar(self, value: Any, path: list[str | int], line: int | None) -> Any:
        if value is None:
            result: Any = None
        elif isinstance(value, bool | ScalarBoolean):
            result = bool(value)
        elif isinstance(value, int):
            result = int(value)
        elif isinstance(value, float):
            result = float(value)
        elif isinstance(value, str):
            result = str(value)
        elif isinstance(value, datetime.date):
            result = value.isoformat()
        elif isinstance(value, TaggedScalar):
            raise ExperimentConfigError(
                ConfigIssue(join_path(path), f"unsupported YAML tag {value.tag!s}", line)
            )
        else:
            raise ExperimentConfigError(
                ConfigIssue(
                    join_path(path), f"unsupported YAML value of type {type(value).__name__}", line
                )
            )
        self.budget.spend(1, len(result) if isinstance(result, str) else 0, path, line)
        return result

    def convert(self, value: Any, path: list[str | int], line: int | None) -> Any:
        if isinstance(value, CommentedSet):
            raise ExperimentConfigError(
                ConfigIssue(join_path(path), "YAML sets are not supported", line)
            )
        if not isinstance(value, dict | list):
            return self.scalar(value, path, line)
        if len(path) >= MAX_DEPTH:
            raise ExperimentConfigError(
                ConfigIssue(join_path(path), f"config is nested deeper than {MAX_DEPTH}", line)
            )
        marker = id(value)
        if marker in self.active:
            raise ExperimentConfigError(
                ConfigIssue(join_path(path), "recursive YAML alias is not supported", line)
            )
        self.active.add(marker)
        try:
            self.budget.spend(1, 0, path, line)
            if isinstance(value, dict):
                return self._mapping(value, path, line)
            return self._sequence(value, path)
        finally:
            self.active.discard(marker)

    def _mapping(self, value: dict, path: list[str | int], line: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for raw_key, raw_item in value.items():
            key_line = _line_of(value, raw_key) or line
            key = _plain_key(raw_key, path, key_line)
            child = [*path, key]
            if key in out:
                raise ExperimentConfigError(
                    ConfigIssue(join_path(child), f"duplicate key {key!r}", key_line)
                )
            self.budget.spend(0, len(key), child, key_line)
            if key_line is not None:
                self.lines.setdefault(join_path(child), key_line)
            out[key] = self.convert(raw_item, child, key_line)
        return out

    def _sequence(self, value: list, path: list[str | int]) -> list[Any]:
        out: list[Any] = []
        for index, raw_item in enumerate(value):
            child = [*path, index]
            item_line = _line_of(value, index)
            if item_line is not None:
                self.lines.setdefault(join_path(child), item_line)
            out.append(self.convert(raw_item, child, item_line))
        return out


def _describe(value: Any) -> str:
    if value is None:
        return "an empty document"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, TaggedScalar):
        return f"a tagged scalar ({value.tag!s})"
    if isinstance(value, CommentedSet):
        return "a set"
    return f"a scalar ({type(value).__name__})"


def _parse(text: str | bytes) -> Any:
    if isinstance(text, bytes):
        if len(text) > MAX_CONFIG_BYTES:
            raise ExperimentConfigError(_too_big(len(text)))
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ExperimentConfigError(f"config is not valid UTF-8: {exc}") from None
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_CONFIG_BYTES:
        raise ExperimentConfigError(_too_big(size))
    loader = YAML(typ="rt")
    loader.allow_duplicate_keys = False
    try:
        return loader.load(text)
    except YAMLError as exc:
        raise _yaml_error(exc, text) from None
    except RecursionError:
        raise ExperimentConfigError("config is nested too deeply to parse") from None


def _to_plain(document: Any) -> tuple[Any, LineMap]:
    converter = _Converter()
    try:
        data = converter.convert(document, [], 1)
    except RecursionError:
        raise ExperimentConfigError("config is nested too deeply to parse") from None
    return data, converter.lines


def load_yaml_mapping(text: str | bytes) -> tuple[dict[str, Any], LineMap]:
    """Parse one YAML document that must be a mapping.

    Returns plain data (dict, list, str, int, float, bool, None; dates become ISO strings) and
    a map from dotted key path to the 1-based line where that key or list item appears.
    Raises `ExperimentConfigError` for oversize input, YAML syntax errors, duplicate keys,
    unsupported tags, alias bombs, and a top level that is not a mapping.
    """
    document = _parse(text)
    if not isinstance(document, dict):
        raise ExperimentConfigError(
            ConfigIssue(
                path="",
                message=f"an experiment config must be a YAML mapping, got {_describe(document)}",
                line=1,
            )
        )
    data, lines = _to_plain(document)
    return data, lines


def load_yaml_value(text: str) -> Any:
    """Parse one YAML value (any type; empty text is null) under the same limits."""
    return _to_plain(_parse(text))[0]


def _too_big(size: int) -> ConfigIssue:
    return ConfigIssue(
        path="",
        message=f"config text is {size} bytes; the limit is {MAX_CONFIG_BYTES} bytes (1 MiB)",
    )
