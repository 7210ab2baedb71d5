"""What names, labels, notes and metadata in the model registry, workspaces and projects may be.

Names travel in URL paths (`/api/v1/models/{name}`): the Determined client quotes them with
`urllib.parse.quote`, which leaves `/` as is, so a name with a slash could never be reached
again. Names must also round-trip exactly (`det model register-version` posts to the name the
master returned), so they are stored as given: spaces and any Unicode letters are fine; slashes,
control characters (NUL included), leading or trailing blanks are refused. A model name may not be
all digits, because a number in the path names a model by its id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controlplane.domain import limits
from controlplane.domain.errors import InvalidArgument


def name_problem(name: str) -> str | None:
    """Why `name` cannot name a model, workspace or project, or None when it can."""
    if not name or not name.strip():
        return "is empty"
    if len(name) > limits.SHORT_NAME_CHARS:
        return f"is {len(name)} characters long; at most {limits.SHORT_NAME_CHARS} are allowed"
    if "/" in name or "\\" in name:
        return "contains a slash; names appear in URL paths"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "contains a control character (NUL, newline, ...)"
    if name != name.strip():
        return "starts or ends with blanks"
    return None


def check_name(kind: str, name: str) -> str:
    problem = name_problem(name)
    if problem is not None:
        raise InvalidArgument(f"invalid {kind} name {name[:80]!r}: it {problem}")
    return name


def check_model_name(name: str) -> str:
    check_name("model", name)
    if name.isascii() and name.isdigit():  # what the API reads as an id (model_registry)
        raise InvalidArgument(
            f"invalid model name {name!r}: a model name may not be a number (numbers name ids)"
        )
    return name


def check_text(field: str, value: str, limit: int) -> str:
    if len(value) > limit:
        raise InvalidArgument(f"{field} is {len(value)} characters; at most {limit} are allowed")
    if "\x00" in value:
        raise InvalidArgument(f"{field} contains a NUL character")
    return value


def check_labels(field: str, labels: Sequence[str]) -> list[str]:
    if len(labels) > limits.LABELS:
        raise InvalidArgument(f"{field}: {len(labels)} labels; at most {limits.LABELS} allowed")
    for label in labels:
        check_text(f"a label of {field}", label, limits.SHORT_NAME_CHARS)
    return list(labels)


def check_metadata(field: str, metadata: dict[str, Any]) -> dict[str, Any]:
    limits.check_json_size(field, metadata, limits.REGISTRY_METADATA_BYTES)
    return metadata


def project_key(name: str, taken: set[str]) -> str:
    """A free key for a project named `name`: its first letters and digits, upper-cased, made
    unique with a number where needed (Determined generates keys the same way)."""
    stem = "".join(c for c in name.upper() if c.isascii() and c.isalnum())[:3] or "PRJ"
    if stem not in taken:
        return stem
    for n in range(1, 10**4):
        candidate = f"{stem}{n}"[: limits.PROJECT_KEY_CHARS]
        if candidate not in taken:
            return candidate
    raise InvalidArgument(f"no free project key for {name!r}: give one with --key")


def check_project_key(key: str) -> str:
    if not (1 <= len(key) <= limits.PROJECT_KEY_CHARS) or not (key.isascii() and key.isalnum()):
        raise InvalidArgument(
            f"invalid project key {key[:20]!r}: use 1-{limits.PROJECT_KEY_CHARS} letters or digits"
        )
    return key.upper()
