"""Parsing the experiment list's filter JSON and sort string: what is accepted, and the reason
for what is not."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.errors import InvalidArgument
from controlplane.domain.experiment_filter import (
    EXPERIMENT,
    HYPERPARAMETERS,
    MAX_DEPTH,
    VALIDATIONS,
    Column,
    Condition,
    Group,
    parse_filter,
    parse_sort,
)


def _field(name: str, op: str = "=", value: object = 1) -> dict:
    return {"kind": "field", "columnName": name, "operator": op, "value": value}


def _group(*children: dict, conjunction: str = "and") -> dict:
    return {"kind": "group", "conjunction": conjunction, "children": list(children)}


def test_a_tree_with_every_location() -> None:
    text = json.dumps(
        {
            "filterGroup": _group(
                _field("state", "=", "STATE_COMPLETED"),
                _group(
                    _field("hp.lr", ">", "0.01"),
                    _field("validation.loss", "<", 0.5),
                    conjunction="or",
                ),
            ),
            "showArchived": True,
        }
    )
    search = parse_filter(text)
    assert search.show_archived
    assert search.where == Group(
        "and",
        (
            Condition(Column(EXPERIMENT, "state"), "=", "COMPLETED"),
            Group(
                "or",
                (
                    Condition(Column(HYPERPARAMETERS, "lr"), ">", 0.01),
                    Condition(Column(VALIDATIONS, "loss"), "<", 0.5),
                ),
            ),
        ),
    )


def test_unfinished_rows_are_skipped_and_empty_means_everything() -> None:
    assert parse_filter(None).where == Group("and", ())
    text = json.dumps({"filterGroup": _group(_field("", "=", 1), _field("name", "=", None))})
    assert parse_filter(text).where == Group("and", ())


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{", "not JSON"),
        ("[1]", "JSON object"),
        (json.dumps({"filterGroup": _group(_field("bogus"))}), "unknown column"),
        (json.dumps({"filterGroup": _group(_field("state", "=", "NOPE"))}), "unknown state"),
        (json.dumps({"filterGroup": _group(_field("id", "like"))}), "unknown operator"),
        (json.dumps({"filterGroup": _group(_field("id", "=", "x"))}), "is a number"),
        (json.dumps({"filterGroup": _group(conjunction="xor")}), "conjunction"),
        (json.dumps({"filterGroup": {"kind": "leaf"}}), "kind"),
        (json.dumps({"filterGroup": _group(_field("a/\x00b"))}), "column name"),
        (json.dumps({"filterGroup": _group(*[_field("id")] * 300)}), "more than"),
        ("x" * 70_000, "bytes"),
    ],
)
def test_bad_filters_say_why(text: str, reason: str) -> None:
    with pytest.raises(InvalidArgument, match=reason):
        parse_filter(text)


def test_nesting_is_bounded() -> None:
    node = _field("id")
    for _ in range(MAX_DEPTH + 2):
        node = _group(node)
    with pytest.raises(InvalidArgument, match="nests deeper"):
        parse_filter(json.dumps({"filterGroup": node}))


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda kids: (
            st.lists(kids, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    ["kind", "children", "columnName", "operator", "value", "conjunction"]
                ),
                kids,
                max_size=5,
            )
        ),
        max_leaves=20,
    )
)
def test_any_json_parses_or_is_refused_cleanly(raw: object) -> None:
    try:
        search = parse_filter(json.dumps({"filterGroup": raw}))
    except InvalidArgument as exc:
        assert str(exc)
    else:
        assert isinstance(search.where, Group)


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        (None, [("id", True)]),
        ("name=asc", [("name", False), ("id", True)]),
        ("hp.lr=desc,id=asc", [("lr", True), ("id", False)]),
        ("validation.loss", [("loss", False), ("id", True)]),
    ],
)
def test_sort(text: str | None, keys: list[tuple[str, bool]]) -> None:
    assert [(k.column.name, k.descending) for k in parse_sort(text)] == keys


@pytest.mark.parametrize("text", ["id=up", "bogus=asc", ",".join(["id=asc"] * 9)])
def test_bad_sorts_say_why(text: str) -> None:
    with pytest.raises(InvalidArgument):
        parse_sort(text)
