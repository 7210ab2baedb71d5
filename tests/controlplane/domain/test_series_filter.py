"""timeSeriesFilter and metricIds parsing: windows, predicates and the refusals of bad input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.errors import InvalidArgument
from controlplane.domain.series_filter import batch_window, keeps, metric_ids, parse
from controlplane.services.trials import check_group

P = "timeSeriesFilter."


@pytest.mark.parametrize(
    ("params", "window", "want"),
    [
        ({"integerRange.gte": "10", "integerRange.lte": "20"}, (None, None), (10, 20)),
        ({"integerRange.gt": "10", "integerRange.lt": "20"}, (None, None), (11, 19)),
        ({"doubleRange.gt": "9.5", "doubleRange.lt": "20.5"}, (None, None), (10, 20)),
        ({"integerRange.gte": "10"}, (15, 30), (15, 30)),
        ({"integerRange.lte": "25"}, (15, 30), (15, 25)),
        ({}, (3, 4), (3, 4)),
    ],
)
def test_a_batch_range_narrows_the_window(
    params: dict[str, str], window: tuple[int | None, int | None], want: tuple[int, int]
) -> None:
    f = parse({P + "name": "batches", **{P + k: v for k, v in params.items()}}, {})
    assert batch_window(f, *window) == want


def test_epoch_time_and_listed_steps_filter_points() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    epoch = parse({P + "name": "epoch", P + "doubleRange.gte": "1", P + "doubleRange.lt": "2"}, {})
    assert batch_window(epoch, None, None) == (None, None)
    keep = keeps(epoch)
    assert [keep(1, e, t0) for e in (0.5, 1.0, 1.5, 2.0, None)] == [
        False, True, True, False, False,
    ]  # fmt: skip
    at = parse({P + "name": "time", P + "timeRange.lte": "2026-01-01T00:00:00Z"}, {})
    assert keeps(at)(1, None, t0) and not keeps(at)(1, None, t0.replace(second=1))
    listed = parse(
        {P + "name": "batches"},
        {P + "integerRange.incl": ["1", "2", "3"], P + "integerRange.notIn": ["2"]},
    )
    assert [s for s in range(5) if keeps(listed)(s, None, None)] == [1, 3]
    assert keeps(None)(7, None, None)
    assert parse({}, {}) is None


@pytest.mark.parametrize(
    ("params", "lists", "message"),
    [
        ({P + "integerRange.gt": "1"}, {}, "name is required"),
        ({P + "name": "loss"}, {}, "must be one of"),
        ({P + "name": "batches", P + "integerRange.gt": "x"}, {}, "must be a number"),
        ({P + "name": "batches", P + "integerRange.gt": "1.5"}, {}, "must be a number"),
        ({P + "name": "epoch", P + "doubleRange.gt": "nan"}, {}, "must be finite"),
        ({P + "name": "epoch", P + "integerRange.gt": "1"}, {}, "does not apply"),
        ({P + "name": "time", P + "timeRange.gt": "yesterday"}, {}, "RFC 3339"),
        ({P + "name": "batches", P + "integerRange.gt": "1", P + "doubleRange.lt": "2"}, {},
         "one range kind"),
        ({P + "name": "batches"}, {P + "integerRange.incl": ["1"] * 1001}, "at most 1000"),
    ],
)  # fmt: skip
def test_bad_filters_are_refused(params: dict, lists: dict, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse(params, lists)


def test_metric_ids_group_by_group_and_keep_dots_in_names() -> None:
    got = metric_ids(
        ["training.loss", "validation.acc", "training.a.b", "training.loss"], check_group
    )
    assert got == {"training": ["loss", "a.b"], "validation": ["acc"]}
    assert metric_ids(["inf%er en/ce.z/me.t r%i]"], check_group) == {
        "inf%er en/ce": ["z/me.t r%i]"]
    }
    for bad in ("loss", ".loss", "training.", "bad\x00group.loss", "training." + "m" * 1025):
        with pytest.raises(InvalidArgument):
            metric_ids([bad], check_group)


@given(
    st.integers(-100, 100), st.integers(-100, 100), st.booleans(), st.booleans(),
    st.integers(-120, 120),
)  # fmt: skip
def test_the_window_holds_exactly_the_steps_in_range(
    lo: int, hi: int, lo_open: bool, hi_open: bool, step: int
) -> None:
    f = parse(
        {
            P + "name": "batches",
            P + ("integerRange.gt" if lo_open else "integerRange.gte"): str(lo),
            P + ("integerRange.lt" if hi_open else "integerRange.lte"): str(hi),
        },
        {},
    )
    first, last = batch_window(f, None, None)
    assert first is not None and last is not None
    inside = (step > lo if lo_open else step >= lo) and (step < hi if hi_open else step <= hi)
    assert (first <= step <= last) == inside
