"""validate_experiment_config: searchers, with key paths and line numbers."""

from __future__ import annotations

import textwrap

import pytest

from controlplane.api.schemas.expconf import (
    AdaptiveAshaSearcher,
    AsyncHalvingSearcher,
    GridSearcher,
    RandomSearcher,
    SingleSearcher,
    TpeSearcher,
)
from tests.controlplane.api.schemas.expconf_checks import issues as _issues
from tests.controlplane.api.schemas.expconf_checks import one_issue as _one_issue
from tests.controlplane.api.schemas.expconf_checks import validate as _validate

HEAD = "name: exp\nentrypoint: python3 train.py\n"


def _searcher(body: str) -> str:
    return HEAD + "searcher:\n" + textwrap.indent(textwrap.dedent(body), "  ")


# ----- searchers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "model", "expected"),
    [
        (
            "name: single\nmetric: loss\n",
            SingleSearcher,
            {"smaller_is_better": True, "max_length": None, "source_trial_id": None},
        ),
        (
            "name: single\nmetric: acc\nsmaller_is_better: false\nmax_length: {batches: 100}\n",
            SingleSearcher,
            {"smaller_is_better": False},
        ),
        (
            "name: random\nmetric: loss\nmax_trials: 8\n",
            RandomSearcher,
            {"max_trials": 8, "max_concurrent_trials": 16},
        ),
        (
            "name: random\nmetric: loss\nmax_trials: 8\nmax_concurrent_trials: 0\n",
            RandomSearcher,
            {"max_concurrent_trials": 0},
        ),
        ("name: grid\nmetric: loss\n", GridSearcher, {"max_concurrent_trials": 16}),
        (
            "name: async_halving\nmetric: loss\nnum_rungs: 3\nmax_trials: 10\n"
            "time_metric: batches\nmax_time: 900\n",
            AsyncHalvingSearcher,
            {"divisor": 4, "max_concurrent_trials": 16, "stop_once": False, "num_rungs": 3},
        ),
        (
            "name: async_halving\nmetric: loss\nnum_rungs: 3\nmax_trials: 10\n"
            "time_metric: batches\nmax_time: 900\ndivisor: 3\nstop_once: true\n"
            "source_checkpoint_uuid: abc\nsource_trial_id: 7\n",
            AsyncHalvingSearcher,
            {"divisor": 3, "stop_once": True, "source_trial_id": 7},
        ),
        (
            "name: adaptive_asha\nmetric: loss\nmax_trials: 16\ntime_metric: batches\n"
            "max_time: 100\n",
            AdaptiveAshaSearcher,
            {
                "mode": "standard",
                "divisor": 4,
                "max_rungs": 5,
                "bracket_rungs": [],
                "promotions": False,
                "sampler": "random",
            },
        ),
        (
            # With promotions the expanded config says what runs: one bracket, TPE sampling.
            "name: adaptive_asha\nmetric: loss\nmax_trials: 16\ntime_metric: batches\n"
            "max_time: 100\npromotions: true\n",
            AdaptiveAshaSearcher,
            {"mode": "aggressive", "promotions": True, "sampler": "tpe"},
        ),
        (
            "name: adaptive_asha\nmetric: loss\nmax_trials: 16\ntime_metric: batches\n"
            "max_time: 100\npromotions: true\nmode: standard\nsampler: random\n",
            AdaptiveAshaSearcher,
            {"mode": "standard", "promotions": True, "sampler": "random"},
        ),
        (
            "name: adaptive_asha\nmetric: loss\nmax_trials: 16\ntime_metric: batches\n"
            "max_time: 100\npromotions: true\npromotion_rule: curve\n",
            AdaptiveAshaSearcher,
            {"promotions": True, "promotion_rule": "curve", "sampler": "tpe"},
        ),
        (
            "name: async_halving\nmetric: loss\nnum_rungs: 2\nmax_trials: 4\n"
            "time_metric: batches\nmax_time: 8\nsampler: tpe\n",
            AsyncHalvingSearcher,
            {"promotions": False, "sampler": "tpe"},
        ),
        (
            "name: adaptive_asha\nmetric: loss\nmax_trials: 16\ntime_metric: epochs\n"
            "max_time: 100\nmode: aggressive\nbracket_rungs: [3, 2]\nmax_length: 1000\n",
            AdaptiveAshaSearcher,
            {"mode": "aggressive", "bracket_rungs": [3, 2], "max_length": 1000},
        ),
    ],
)
def test_valid_searchers(body: str, model: type, expected: dict) -> None:
    cfg = _validate(_searcher(body))
    assert type(cfg.searcher) is model
    for key, value in expected.items():
        assert getattr(cfg.searcher, key) == value


@pytest.mark.parametrize(
    ("body", "path", "line", "fragment"),
    [
        ("name: random\nmetric: loss\n", "searcher.max_trials", 3, "Field required"),
        (
            "name: random\nmetric: loss\nmax_trials: 0\n",
            "searcher.max_trials",
            6,
            "greater than or equal to 1",
        ),
        (
            "name: random\nmetric: loss\nmax_trials: 2\nmax_concurrent_trials: -1\n",
            "searcher.max_concurrent_trials",
            7,
            "greater than or equal to 0",
        ),
        ("name: random\nmetric: loss\nmax_trials: '4'\n", "searcher.max_trials", 6, "integer"),
        ("name: random\nmetric: loss\nmax_trials: 4.5\n", "searcher.max_trials", 6, "integer"),
        (
            "name: async_halving\nmetric: loss\nmax_trials: 10\ntime_metric: b\nmax_time: 9\n",
            "searcher.num_rungs",
            3,
            "Field required",
        ),
        (
            "name: async_halving\nmetric: loss\nnum_rungs: 3\nmax_trials: 10\nmax_time: 9\n",
            "searcher.time_metric",
            3,
            "Field required",
        ),
        (
            "name: async_halving\nmetric: loss\nnum_rungs: 3\nmax_trials: 10\ntime_metric: b\n",
            "searcher.max_time",
            3,
            "Field required",
        ),
        (
            "name: async_halving\nmetric: m\nnum_rungs: 3\nmax_trials: 10\ntime_metric: b\n"
            "max_time: 9\ndivisor: 1\n",
            "searcher.divisor",
            10,
            "greater than 1",
        ),
        (
            "name: adaptive_asha\nmetric: m\nmax_trials: 4\ntime_metric: b\nmax_time: 9\n"
            "mode: wild\n",
            "searcher.mode",
            9,
            "'aggressive', 'standard' or 'conservative'",
        ),
        (
            "name: adaptive_asha\nmetric: m\nmax_trials: 4\ntime_metric: b\nmax_time: 9\n"
            "bracket_rungs: [2, x]\n",
            "searcher.bracket_rungs.1",
            9,
            "valid integer",
        ),
        (
            "name: adaptive_asha\nmetric: m\nmax_trials: 4\ntime_metric: b\nmax_time: 9\n"
            "promotion_rule: curve\n",
            "searcher.promotion_rule",
            9,
            "needs promotions: true",
        ),
        (
            "name: adaptive_asha\nmetric: m\nmax_trials: 4\ntime_metric: b\nmax_time: 9\n"
            "promotion_rule: elbow\n",
            "searcher.promotion_rule",
            9,
            "'rungs' or 'curve'",
        ),
        (
            "name: adaptive_asha\nmetric: m\nmax_trials: 4\ntime_metric: b\nmax_time: 9\n"
            "max_rungs: 0\n",
            "searcher.max_rungs",
            9,
            "greater than or equal to 1",
        ),
        ("name: grid\nmetric: loss\nmax_trials: 3\n", "searcher.max_trials", 6, "unknown key"),
        ("name: single\nmetric: loss\nmax_length: 0\n", "searcher.max_length", 6, "greater than 0"),
        (
            "name: single\nmetric: loss\nmax_length: {batches: 0}\n",
            "searcher.max_length",
            6,
            "greater than 0",
        ),
        (
            "name: single\nmetric: loss\nmax_length: {batches: 1, epochs: 2}\n",
            "searcher.max_length",
            6,
            "exactly one of batches, records or epochs",
        ),
        (
            "name: single\nmetric: loss\nmax_length: lots\n",
            "searcher.max_length",
            6,
            "must be an integer or a mapping",
        ),
        (
            "name: single\nmetric: loss\nsmaller_is_better: 'no'\n",
            "searcher.smaller_is_better",
            6,
            "valid boolean",
        ),
        ("name: single\nmetric: 3\n", "searcher.metric", 5, "valid string"),
    ],
)
def test_invalid_searchers(body: str, path: str, line: int, fragment: str) -> None:
    got_path, got_line, message = _one_issue(_searcher(body))
    assert got_path == path
    assert got_line == line
    assert fragment in message


@pytest.mark.parametrize("name", ["custom", "sync_halving", "adaptive", "adaptive_simple"])
def test_removed_searchers(name: str) -> None:
    path, line, message = _one_issue(_searcher(f"metric: loss\nname: {name}\nmax_trials: 3\n"))
    assert (path, line) == ("searcher.name", 5)
    assert "has been removed" in message
    assert name in message


def test_unknown_searcher_name() -> None:
    path, line, message = _one_issue(_searcher("name: bayesian\nmetric: loss\n"))
    assert (path, line) == ("searcher.name", 4)
    assert "unknown searcher name 'bayesian'" in message
    assert "adaptive_asha" in message


def test_searcher_without_name() -> None:
    path, line, message = _one_issue(_searcher("metric: loss\nmax_trials: 3\n"))
    assert (path, line) == ("searcher.name", 3)
    assert "Field required" in message


@pytest.mark.parametrize("value", ["single", "[a]", "3"])
def test_searcher_must_be_a_mapping(value: str) -> None:
    path, line, message = _one_issue(HEAD + f"searcher: {value}\n")
    assert (path, line) == ("searcher", 3)
    assert "Input should be a mapping" in message


# ----- 0.38's ASHA time rule, promotions, tpe, grid size -------------------------------------


@pytest.mark.parametrize("name", ["async_halving", "adaptive_asha"])
def test_asha_with_only_the_deprecated_max_length_is_refused_as_determined_does(name: str) -> None:
    body = f"name: {name}\nmetric: loss\nmax_trials: 4\nnum_rungs: 2\nmax_length: {{batches: 90}}\n"
    if name == "adaptive_asha":
        body = body.replace("num_rungs: 2\n", "")
    got = _issues(_searcher(body))
    assert [path for path, _, _ in got] == ["searcher.time_metric", "searcher.max_time"]
    assert f"the `{name}` searcher requires `max_time` and `time_metric` to be set" in got[0][2]


def test_asha_accepts_the_deprecated_keys_next_to_max_time() -> None:
    config = _validate(
        _searcher(
            "name: adaptive_asha\nmetric: loss\nmax_trials: 4\ntime_metric: batches\n"
            "max_time: 90\nmax_length: {batches: 90}\nstop_once: true\nsource_trial_id: 3\n"
        )
    )
    assert config.searcher.max_length is not None  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["async_halving", "adaptive_asha"])
def test_promotions_default_off_and_can_be_turned_on(name: str) -> None:
    body = f"name: {name}\nmetric: loss\nmax_trials: 4\nnum_rungs: 2\ntime_metric: b\nmax_time: 9\n"
    if name == "adaptive_asha":
        body = body.replace("num_rungs: 2\n", "")
    assert _validate(_searcher(body)).searcher.promotions is False  # type: ignore[union-attr]
    on = _validate(_searcher(body + "promotions: true\n")).searcher
    assert on.promotions is True  # type: ignore[union-attr]
    path, _, message = _one_issue(_searcher(body + "promotions: often\n"))
    assert (path, "valid boolean" in message) == ("searcher.promotions", True)


def test_tpe_keys_and_defaults() -> None:
    searcher = _validate(_searcher("name: tpe\nmetric: loss\nmax_trials: 20\n")).searcher
    assert isinstance(searcher, TpeSearcher)
    assert (searcher.max_concurrent_trials, searcher.n_startup_trials) == (16, 10)
    path, _, message = _one_issue(_searcher("name: tpe\nmetric: loss\nmax_trials: 0\n"))
    assert (path, "greater than or equal to 1" in message) == ("searcher.max_trials", True)
    path, _, message = _one_issue(_searcher("name: tpe\nmetric: l\nmax_trials: 2\nnum_rungs: 2\n"))
    assert (path, "unknown key" in message) == ("searcher.num_rungs", True)


def test_a_grid_of_10_to_the_8_points_is_refused() -> None:
    hparams = "".join(
        f"  h{i}: {{type: int, minval: 0, maxval: 100, count: 10}}\n" for i in range(8)
    )
    text = _searcher("name: grid\nmetric: loss\n") + "hyperparameters:\n" + hparams
    path, _, message = _one_issue(text)
    assert path == "hyperparameters"
    assert "the grid has 100000000 points; at most 100000" in message


def test_a_grid_at_the_limit_is_accepted() -> None:
    hparams = "".join(
        f"  h{i}: {{type: int, minval: 0, maxval: 100, count: 10}}\n" for i in range(5)
    )
    _validate(_searcher("name: grid\nmetric: loss\n") + "hyperparameters:\n" + hparams)
