"""load_yaml_mapping: plain data, line maps, and every way YAML input is rejected."""

from __future__ import annotations

import pytest

from controlplane.api.schemas.expconf import (
    MAX_CONFIG_BYTES,
    ConfigIssue,
    ExperimentConfigError,
    load_yaml_mapping,
)

CONFIG = """\
# a comment
name: mnist
description: "first try"
hyperparameters:
  lr: 0.01
  layers:
    type: int
    minval: 1
    maxval: 4
labels:
  - a
  - b
when: 2024-05-01
"""


def _only_issue(text: str) -> ConfigIssue:
    with pytest.raises(ExperimentConfigError) as info:
        load_yaml_mapping(text)
    assert len(info.value.issues) == 1, info.value.issues
    return info.value.issues[0]


def test_returns_plain_python_data() -> None:
    data, _ = load_yaml_mapping(CONFIG)
    assert data == {
        "name": "mnist",
        "description": "first try",
        "hyperparameters": {"lr": 0.01, "layers": {"type": "int", "minval": 1, "maxval": 4}},
        "labels": ["a", "b"],
        "when": "2024-05-01",
    }
    assert type(data) is dict
    assert type(data["hyperparameters"]) is dict
    assert type(data["labels"]) is list
    assert type(data["labels"][0]) is str
    assert type(data["hyperparameters"]["lr"]) is float
    assert type(data["hyperparameters"]["layers"]["minval"]) is int


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("name", 2),
        ("description", 3),
        ("hyperparameters", 4),
        ("hyperparameters.lr", 5),
        ("hyperparameters.layers", 6),
        ("hyperparameters.layers.type", 7),
        ("hyperparameters.layers.maxval", 9),
        ("labels", 10),
        ("labels.0", 11),
        ("labels.1", 12),
        ("when", 13),
    ],
)
def test_line_map(path: str, line: int) -> None:
    _, lines = load_yaml_mapping(CONFIG)
    assert lines[path] == line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: yes", "yes"),
        ("a: on", "on"),
        ("a: true", True),
        ("a: 0o17", 15),
        ("a: 0x1F", 31),
        ("a: 1e-05", 1e-05),
        ("a: 1_000", 1000),
        ("a: '5'", "5"),
        ("a: null", None),
        ("a: ~", None),
        ("a:", None),
        ("a: |\n  two\n  lines\n", "two\nlines\n"),
        ("a: [1, {b: c}]", [1, {"b": "c"}]),
    ],
)
def test_scalars_follow_yaml_1_2(text: str, expected: object) -> None:
    data, _ = load_yaml_mapping(text)
    assert data["a"] == expected
    assert type(data["a"]) is type(expected)


def test_booleans_are_real_bools() -> None:
    data, _ = load_yaml_mapping("a: true\nb: false")
    assert data == {"a": True, "b": False}
    assert type(data["a"]) is bool


def test_numeric_keys_become_strings() -> None:
    data, _ = load_yaml_mapping("hyperparameters:\n  1: x\n  false: y\n  2.5: z\n")
    assert data == {"hyperparameters": {"1": "x", "false": "y", "2.5": "z"}}


def test_merge_keys_and_small_aliases_are_expanded() -> None:
    data, lines = load_yaml_mapping(
        "base: &base\n  x: 1\n  y: [a]\nother:\n  <<: *base\n  z: 2\nsame: *base\n"
    )
    assert data["other"] == {"x": 1, "y": ["a"], "z": 2}
    assert data["same"] == {"x": 1, "y": ["a"]}
    assert data["same"] is not data["base"]
    assert lines["other.z"] == 6


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("name: x\nresources: [1, 2\n", 3, "expected ',' or ']'"),
        ("name: x\n  bad: indent\n", 2, "mapping values are not allowed"),
        ("name: x\n\tb: 1\n", 2, "cannot start any token"),
        ('name: "unterminated\n', 2, "unexpected end of stream"),
        ("a: 1\n---\nb: 2\n", 2, "another document"),
        ("a: *nowhere\n", 1, "undefined alias"),
    ],
)
def test_syntax_errors_report_the_line(text: str, line: int, fragment: str) -> None:
    issue = _only_issue(text)
    assert issue.line == line
    assert fragment in issue.message


@pytest.mark.parametrize(
    ("text", "path", "line"),
    [
        ("name: a\nname: b\n", "name", 2),
        ("resources:\n  slots_per_trial: 1\n  priority: 3\n  slots_per_trial: 2\n", "", 4),
        ("a: {b: 1, b: 2}\n", "a.b", 1),
        ("x: 1\n'1': a\n1: b\n", "1", 3),
    ],
)
def test_duplicate_keys_are_rejected_with_line(text: str, path: str, line: int) -> None:
    issue = _only_issue(text)
    assert "duplicate key" in issue.message
    assert issue.line == line
    if path:
        assert issue.path == path


def test_duplicate_nested_key_names_its_path() -> None:
    issue = _only_issue("x: 0\nresources:\n  priority: 2\n  weight: 1\n  priority: 3\n")
    assert issue.path == "resources.priority"
    assert issue.line == 5
    assert str(issue) == "resources.priority (line 5): duplicate key 'priority'"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty document"),
        ("# only a comment\n", "empty document"),
        ("- a\n- b\n", "a list"),
        ("just a string\n", "a scalar"),
        ("42\n", "a scalar"),
    ],
)
def test_top_level_must_be_a_mapping(text: str, fragment: str) -> None:
    issue = _only_issue(text)
    assert "must be a YAML mapping" in issue.message
    assert fragment in issue.message


def test_billion_laughs_is_rejected() -> None:
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 10):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        rows.append(f"a{level}: &a{level} [{refs}]")
    issue = _only_issue("\n".join(rows) + "\n")
    assert "too large once YAML aliases are expanded" in issue.message


def test_alias_of_a_huge_string_is_rejected() -> None:
    big = "x" * 200_000
    refs = ", ".join(["*s"] * 100)
    issue = _only_issue(f"s: &s {big}\nl: [{refs}]\n")
    assert "too large" in issue.message


def test_recursive_alias_does_not_hang() -> None:
    try:
        data, _ = load_yaml_mapping("a: &a [*a]\n")
    except ExperimentConfigError as exc:
        assert "alias" in str(exc)
    else:
        assert isinstance(data["a"], list)


def test_oversize_text_is_rejected() -> None:
    text = "data:\n  blob: " + "x" * MAX_CONFIG_BYTES + "\n"
    issue = _only_issue(text)
    assert "limit is 1048576 bytes" in issue.message


def test_oversize_bytes_are_rejected() -> None:
    with pytest.raises(ExperimentConfigError, match="1 MiB"):
        load_yaml_mapping(b"a: " + b"x" * MAX_CONFIG_BYTES)


def test_bytes_input_is_decoded() -> None:
    assert load_yaml_mapping("name: café".encode())[0] == {"name": "café"}


def test_invalid_utf8_is_rejected() -> None:
    with pytest.raises(ExperimentConfigError, match="UTF-8"):
        load_yaml_mapping(b"name: \xff\xfe")


def test_deep_nesting_is_rejected() -> None:
    issue = _only_issue("a: " + "[" * 200 + "]" * 200 + "\n")
    assert "nested" in issue.message


@pytest.mark.parametrize(
    ("text", "path", "line", "fragment"),
    [
        ("a: 1\nb: !custom x\n", "b", 2, "unsupported YAML tag !custom"),
        ("a: 1\nb: !!set {x, y}\n", "b", 2, "sets are not supported"),
        ("a: 1\nb: !!binary aGVsbG8=\n", "b", 2, "unsupported YAML value"),
        ("a: 1\n? [x, y]\n: 2\n", "", 2, "mapping keys must be strings"),
    ],
)
def test_unsupported_values(text: str, path: str, line: int, fragment: str) -> None:
    issue = _only_issue(text)
    assert issue.path == path
    assert issue.line == line
    assert fragment in issue.message


def test_error_str_lists_every_issue() -> None:
    error = ExperimentConfigError(
        [
            ConfigIssue("resources.slots_per_trial", "Input should be a valid integer", 7),
            ConfigIssue("name", "Field required", None),
        ]
    )
    assert str(error).splitlines() == [
        "resources.slots_per_trial (line 7): Input should be a valid integer",
        "name: Field required",
    ]
    assert isinstance(error, ValueError)
