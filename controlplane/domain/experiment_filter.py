"""The experiment list's filter and sort, as Determined's web UI sends them, parsed and checked.

The filter is JSON (a `FilterFormSet`): a tree of groups (`conjunction` "and"/"or") whose
leaves compare one column with a value. Columns live in a `location`: the experiment's own
fields, its hyperparameters (`hp.<name>`) or its best trial's validation metrics
(`validation.<name>`). The sort is `col=asc,col2=desc`. Parsing is pure; the services turn the
tree into SQL. Every mistake is an InvalidArgument naming what was wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from controlplane.domain.errors import InvalidArgument
from controlplane.domain.states import RunState, stored_state_name

MAX_FILTER_BYTES = 64 * 1024
MAX_NODES = 200
MAX_DEPTH = 8
MAX_SORT_KEYS = 8
NAME_CHARS = 255

EXPERIMENT = "LOCATION_TYPE_EXPERIMENT"
HYPERPARAMETERS = "LOCATION_TYPE_HYPERPARAMETERS"
VALIDATIONS = "LOCATION_TYPE_VALIDATIONS"

TEXT = "COLUMN_TYPE_TEXT"
NUMBER = "COLUMN_TYPE_NUMBER"
DATE = "COLUMN_TYPE_DATE"
ARRAY = "COLUMN_TYPE_ARRAY"

# The experiment's own columns and their types, as GET /projects/{id}/columns lists them.
EXPERIMENT_COLUMNS: dict[str, str] = {
    "id": NUMBER,
    "name": TEXT,
    "description": TEXT,
    "state": TEXT,
    "user": TEXT,
    "tags": ARRAY,
    "searcherType": TEXT,
    "resourcePool": TEXT,
    "startTime": DATE,
    "endTime": DATE,
    "progress": NUMBER,
    "numTrials": NUMBER,
    "searcherMetricsVal": NUMBER,
}

OPERATORS = {"=", "!=", "<", "<=", ">", ">=", "contains", "not contains", "is empty", "not empty"}
ORDER_OPS = {"<", "<=", ">", ">="}
TEXT_OPS = {"contains", "not contains"}


@dataclass(frozen=True)
class Column:
    location: str
    name: str  # "state", or the hyperparameter / metric name without its prefix


@dataclass(frozen=True)
class Condition:
    column: Column
    operator: str
    value: str | float | bool | None


@dataclass(frozen=True)
class Group:
    conjunction: str  # "and" | "or"
    children: tuple[Group | Condition, ...]


@dataclass(frozen=True)
class SortKey:
    column: Column
    descending: bool


@dataclass(frozen=True)
class Search:
    where: Group
    show_archived: bool


def column_of(name: str, location: str | None = None) -> Column:
    """`hp.lr` and `validation.loss` carry their location; other names are the experiment's."""
    if not isinstance(name, str) or not name or len(name) > NAME_CHARS or "\x00" in name:
        raise InvalidArgument(f"column name {name!r} must be 1-{NAME_CHARS} characters")
    if name.startswith("hp."):
        return Column(HYPERPARAMETERS, name[3:])
    if name.startswith("validation."):
        return Column(VALIDATIONS, name[len("validation.") :])
    if location in (HYPERPARAMETERS, VALIDATIONS):
        return Column(location, name)
    if name not in EXPERIMENT_COLUMNS:
        known = ", ".join(sorted(EXPERIMENT_COLUMNS))
        raise InvalidArgument(
            f"unknown column {name!r}; use hp.<name>, validation.<name> or {known}"
        )
    return Column(EXPERIMENT, name)


def _value(column: Column, operator: str, raw: Any) -> str | float | bool | None:
    if operator in ("is empty", "not empty"):
        return None
    if raw is None:
        raise InvalidArgument(f"filter on {column.name!r} with {operator!r} needs a value")
    if isinstance(raw, bool):
        return raw
    if column.name == "state" and column.location == EXPERIMENT:
        try:
            return RunState(stored_state_name(str(raw))).value
        except ValueError:
            raise InvalidArgument(f"unknown state {raw!r}") from None
    kind = EXPERIMENT_COLUMNS.get(column.name, NUMBER)
    if column.location != EXPERIMENT and isinstance(raw, str) and operator not in TEXT_OPS:
        try:
            return float(raw)
        except ValueError:
            return raw  # a categorical hyperparameter
    if kind == NUMBER and column.location == EXPERIMENT:
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise InvalidArgument(f"{column.name!r} is a number, not {raw!r}") from None
    if isinstance(raw, int | float):
        return float(raw)
    if not isinstance(raw, str) or len(raw) > 4096 or "\x00" in raw:
        raise InvalidArgument(f"filter value for {column.name!r} must be a short string or number")
    return raw


def _node(raw: Any, depth: int, budget: list[int]) -> Group | Condition | None:
    budget[0] -= 1
    if budget[0] < 0:
        raise InvalidArgument(f"the filter has more than {MAX_NODES} conditions and groups")
    if depth > MAX_DEPTH:
        raise InvalidArgument(f"the filter nests deeper than {MAX_DEPTH} groups")
    if not isinstance(raw, dict):
        raise InvalidArgument("each filter node must be an object")
    kind = raw.get("kind")
    if kind == "group":
        conjunction = raw.get("conjunction", "and")
        if conjunction not in ("and", "or"):
            raise InvalidArgument(f"conjunction must be 'and' or 'or', not {conjunction!r}")
        children = raw.get("children") or []
        if not isinstance(children, list):
            raise InvalidArgument("a group's children must be a list")
        parsed = [_node(c, depth + 1, budget) for c in children]
        return Group(conjunction, tuple(p for p in parsed if p is not None))
    if kind == "field":
        name = raw.get("columnName")
        if name in (None, ""):
            return None  # Determined's UI sends empty rows while they are being filled in
        column = column_of(name, raw.get("location"))
        operator = raw.get("operator", "=")
        if operator not in OPERATORS:
            raise InvalidArgument(f"unknown operator {operator!r}; one of {sorted(OPERATORS)}")
        value = raw.get("value")
        if value is None and operator not in ("is empty", "not empty"):
            return None  # an unfinished row
        return Condition(column, operator, _value(column, operator, value))
    raise InvalidArgument(f"filter node kind must be 'group' or 'field', not {kind!r}")


def parse_filter(text: str | None) -> Search:
    """The parsed filter; an empty or missing one matches every unarchived experiment."""
    if not text:
        return Search(Group("and", ()), show_archived=False)
    if len(text.encode()) > MAX_FILTER_BYTES:
        raise InvalidArgument(f"the filter is over {MAX_FILTER_BYTES} bytes")
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise InvalidArgument(f"the filter is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise InvalidArgument("the filter must be a JSON object")
    group = _node(raw.get("filterGroup") or {"kind": "group", "children": []}, 0, [MAX_NODES])
    if not isinstance(group, Group):
        group = Group("and", (group,) if group is not None else ())
    return Search(group, show_archived=bool(raw.get("showArchived", False)))


def parse_sort(text: str | None) -> tuple[SortKey, ...]:
    """`name=asc,hp.lr=desc`; the id (descending) breaks ties and is the default."""
    keys: list[SortKey] = []
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, _, direction = part.strip().partition("=")
        direction = direction or "asc"
        if direction not in ("asc", "desc"):
            raise InvalidArgument(f"sort direction must be asc or desc, not {direction!r}")
        keys.append(SortKey(column_of(name), direction == "desc"))
    if len(keys) > MAX_SORT_KEYS:
        raise InvalidArgument(f"at most {MAX_SORT_KEYS} sort keys are allowed")
    if not any(k.column == Column(EXPERIMENT, "id") for k in keys):
        keys.append(SortKey(Column(EXPERIMENT, "id"), True))
    return tuple(keys)
