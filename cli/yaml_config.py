"""Reading YAML config files and applying `--config key.path=value` overrides."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from cli.errors import CliError


def _yaml() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False
    return yaml


def read_text(path: Path, what: str) -> str:
    """Read a user-supplied file, with a one-line error for the usual failures."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise CliError(f"{what} {path} is a directory, not a file") from None
    except UnicodeDecodeError:
        raise CliError(f"{what} {path} is not UTF-8 text") from None
    except OSError as exc:
        raise CliError(f"cannot read {what} {path}: {exc.strerror}") from None


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML text; a syntax error becomes one line naming the file and position."""
    try:
        return _yaml().load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = exc.problem or exc.context or "syntax error"
        raise CliError(f"invalid YAML in {source}{where}: {problem}") from None
    except YAMLError as exc:
        first = str(exc).strip().splitlines()
        raise CliError(f"invalid YAML in {source}: {first[0] if first else exc}") from None


def load_mapping(path: Path, what: str) -> tuple[str, dict[str, Any]]:
    """Return a YAML file's raw text and its parsed top-level mapping."""
    text = read_text(path, what)
    data = parse_yaml(text, str(path))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise CliError(f"{what} {path} must be a YAML mapping, not a {type(data).__name__}")
    return text, data


def dump_yaml(data: Any) -> str:
    buf = io.StringIO()
    _yaml().dump(data, buf)
    return buf.getvalue()


def parse_override(spec: str) -> tuple[list[str], Any]:
    """`a.b.c=VALUE` → (["a", "b", "c"], VALUE parsed as YAML)."""
    key, sep, raw = spec.partition("=")
    keys = key.strip().split(".")
    if not sep or not key.strip() or any(not part for part in keys):
        raise CliError(f"invalid --config override {spec!r}: expected KEY[.KEY...]=VALUE")
    # An empty value is YAML null, as with the real client's yaml.safe_load.
    return keys, parse_yaml(raw, f"--config {spec!r}")


def apply_overrides(config: dict[str, Any], specs: list[str]) -> dict[str, Any]:
    """Set each dotted key in place, creating missing mappings on the way."""
    for spec in specs:
        keys, value = parse_override(spec)
        node: dict[str, Any] = config
        for depth, part in enumerate(keys[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                where = ".".join(keys[: depth + 1])
                raise CliError(f"cannot apply --config {spec!r}: {where} is not a mapping")
            node = child
        node[keys[-1]] = value
    return config
