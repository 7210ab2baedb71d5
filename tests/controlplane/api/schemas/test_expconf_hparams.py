"""validate_experiment_config: hyperparameters, with key paths and line numbers."""

from __future__ import annotations

import textwrap

import pytest

from controlplane.api.schemas.expconf import (
    CategoricalHyperparameter,
    ConstHyperparameter,
    DoubleHyperparameter,
    ExperimentConfig,
    GridSearcher,
    IntHyperparameter,
    LogHyperparameter,
)
from tests.controlplane.api.schemas.expconf_checks import issues as _issues
from tests.controlplane.api.schemas.expconf_checks import one_issue as _one_issue
from tests.controlplane.api.schemas.expconf_checks import validate as _validate

HEAD = "name: exp\nentrypoint: python3 train.py\n"


# ----- hyperparameters -----------------------------------------------------------------------

HP_HEAD = HEAD + "searcher: {name: random, metric: loss, max_trials: 2}\nhyperparameters:\n"


def _hps(body: str) -> str:
    return HP_HEAD + textwrap.indent(textwrap.dedent(body), "  ")


@pytest.mark.parametrize(
    ("body", "name", "model", "fields"),
    [
        ("lr: {type: const, val: 0.1}\n", "lr", ConstHyperparameter, {"val": 0.1}),
        ("lr: 0.1\n", "lr", ConstHyperparameter, {"val": 0.1}),
        ("lr: adam\n", "lr", ConstHyperparameter, {"val": "adam"}),
        ("lr: [1, 2]\n", "lr", ConstHyperparameter, {"val": [1, 2]}),
        ("lr: null\n", "lr", ConstHyperparameter, {"val": None}),
        ("lr: {type: const, val: {a: 1}}\n", "lr", ConstHyperparameter, {"val": {"a": 1}}),
        (
            "n: {type: int, minval: 1, maxval: 8}\n",
            "n",
            IntHyperparameter,
            {"minval": 1, "maxval": 8, "count": None},
        ),
        (
            "n: {type: int, minval: 3, maxval: 3, count: 1}\n",
            "n",
            IntHyperparameter,
            {"count": 1},
        ),
        (
            "d: {type: double, minval: 0, maxval: 0.5}\n",
            "d",
            DoubleHyperparameter,
            {"minval": 0.0, "maxval": 0.5},
        ),
        (
            "g: {type: log, minval: -4, maxval: -1}\n",
            "g",
            LogHyperparameter,
            {"base": 10.0, "minval": -4.0},
        ),
        ("g: {type: log, minval: 1, maxval: 3, base: 2}\n", "g", LogHyperparameter, {"base": 2.0}),
        (
            "c: {type: categorical, vals: [sgd, adam]}\n",
            "c",
            CategoricalHyperparameter,
            {"vals": ["sgd", "adam"]},
        ),
    ],
)
def test_hyperparameter_types(body: str, name: str, model: type, fields: dict) -> None:
    cfg = _validate(_hps(body))
    value = cfg.hyperparameters[name]
    assert type(value) is model
    for key, expected in fields.items():
        assert getattr(value, key) == expected


def test_nested_hyperparameters() -> None:
    cfg = _validate(
        _hps(
            "optimizer:\n  name: adam\n  lr: {type: log, minval: -3, maxval: -1}\n"
            "  inner: {deep: {type: int, minval: 1, maxval: 2}}\nempty: {}\n"
        )
    )
    optimizer = cfg.hyperparameters["optimizer"]
    assert isinstance(optimizer, dict)
    assert type(optimizer["name"]) is ConstHyperparameter
    assert type(optimizer["lr"]) is LogHyperparameter
    assert type(optimizer["inner"]["deep"]) is IntHyperparameter
    assert cfg.hyperparameters["empty"] == {}


@pytest.mark.parametrize(
    ("body", "path", "line", "fragment"),
    [
        (
            "lr: {type: int, minval: 5, maxval: 1}\n",
            "hyperparameters.lr.minval",
            5,
            "minval (5) must be less than or equal to maxval (1)",
        ),
        (
            "lr:\n  type: double\n  minval: 0.5\n  maxval: 0.1\n",
            "hyperparameters.lr.minval",
            7,
            "less than or equal to maxval",
        ),
        (
            "lr: {type: log, minval: 2, maxval: 1}\n",
            "hyperparameters.lr.minval",
            5,
            "less than or equal",
        ),
        (
            "lr: {type: log, minval: 1, maxval: 2, base: 0}\n",
            "hyperparameters.lr.base",
            5,
            "greater than 0",
        ),
        (
            "lr:\n  type: log\n  minval: 1\n  maxval: 2\n  base: -2\n",
            "hyperparameters.lr.base",
            9,
            "greater than 0",
        ),
        (
            "lr: {type: int, minval: 1, maxval: 2, count: 0}\n",
            "hyperparameters.lr.count",
            5,
            "greater than or equal to 1",
        ),
        ("lr: {type: categorical, vals: []}\n", "hyperparameters.lr.vals", 5, "at least 1 item"),
        ("lr: {type: categorical}\n", "hyperparameters.lr.vals", 5, "Field required"),
        (
            "lr: {type: int, minval: 1.5, maxval: 2}\n",
            "hyperparameters.lr.minval",
            5,
            "valid integer",
        ),
        ("lr: {type: double, minval: 1}\n", "hyperparameters.lr.maxval", 5, "Field required"),
        (
            "lr: {type: double, minval: 0, maxval: 1, step: 2}\n",
            "hyperparameters.lr.step",
            5,
            "unknown key 'step'",
        ),
        (
            "lr: {type: uniform, minval: 0}\n",
            "hyperparameters.lr.type",
            5,
            "unknown hyperparameter",
        ),
        (
            "opt:\n  inner:\n    lr: {type: int, minval: x, maxval: 2}\n",
            "hyperparameters.opt.inner.lr.minval",
            7,
            "valid integer",
        ),
        (
            "opt:\n  nested:\n    lr: {type: boolean}\n",
            "hyperparameters.opt.nested.lr.type",
            7,
            "unknown hyperparameter type 'boolean'",
        ),
        (
            "lr: {type: double, minval: 0, maxval: .inf}\n",
            "hyperparameters.lr.maxval",
            5,
            "finite number",
        ),
    ],
)
def test_invalid_hyperparameters(body: str, path: str, line: int, fragment: str) -> None:
    got_path, got_line, message = _one_issue(_hps(body))
    assert got_path == path
    assert got_line == line
    assert fragment in message


def test_hyperparameters_must_be_a_mapping() -> None:
    path, line, message = _one_issue(HP_HEAD.replace("hyperparameters:\n", "hyperparameters: 3\n"))
    assert (path, line) == ("hyperparameters", 4)
    assert "valid dictionary" in message or "mapping" in message


GRID = HEAD + "searcher: {name: grid, metric: loss}\nhyperparameters:\n"


def test_grid_accepts_counts() -> None:
    cfg = _validate(
        GRID + "  a: {type: int, minval: 0, maxval: 4, count: 5}\n  b: {type: categorical, "
        "vals: [1]}\n  c: 3\n  d: {e: {type: log, minval: 1, maxval: 2, count: 2}}\n"
    )
    assert type(cfg.searcher) is GridSearcher


def test_grid_requires_counts_with_paths_and_lines() -> None:
    found = _issues(
        GRID + "  a: {type: int, minval: 0, maxval: 4}\n  b: {type: categorical, vals: [1]}\n"
        "  d:\n    e: {type: double, minval: 1, maxval: 2}\n"
        "    f: {type: log, minval: 1, maxval: 2, count: 2}\n"
    )
    assert found == [
        ("hyperparameters.a.count", 5, "grid search is in use but count was not provided"),
        ("hyperparameters.d.e.count", 8, "grid search is in use but count was not provided"),
    ]


def test_counts_are_optional_without_grid() -> None:
    cfg = _validate(_hps("a: {type: int, minval: 0, maxval: 4}\n"))
    assert cfg.hyperparameters["a"].count is None  # type: ignore[union-attr]


def test_models_built_in_python_are_accepted_as_is() -> None:
    cfg = ExperimentConfig(
        name="x",
        hyperparameters={
            "a": ConstHyperparameter(type="const", val=1),
            "b": {"c": IntHyperparameter(type="int", minval=1, maxval=2)},
        },
    )
    assert cfg.hyperparameters["a"] == ConstHyperparameter(type="const", val=1)
    assert cfg.model_dump()["hyperparameters"] == {
        "a": {"type": "const", "val": 1},
        "b": {"c": {"type": "int", "minval": 1, "maxval": 2, "count": None}},
    }
