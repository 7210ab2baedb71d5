"""An experiment's validation history: the validations that improved on the best before them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.validation_history import Validation, improving

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def v(trial: int, minute: int, value: float | None) -> Validation:
    return Validation(trial, T0 + timedelta(minutes=minute), value)


class TestImproving:
    @pytest.mark.parametrize(
        ("rows", "smaller", "kept"),
        [
            ([], True, []),
            ([v(1, 0, 0.5)], True, [(1, 0.5)]),
            # worse, equal and NaN never improve; a later better one does
            ([v(1, 0, 0.5), v(2, 1, 0.7), v(1, 2, 0.5), v(2, 3, float("nan")), v(2, 4, 0.1)],
             True, [(1, 0.5), (2, 0.1)]),
            # larger is better
            ([v(1, 0, 0.5), v(2, 1, 0.7), v(1, 2, 0.6)], False, [(1, 0.5), (2, 0.7)]),
            # a validation without the searcher metric is skipped
            ([v(1, 0, None), v(2, 1, 3.0)], True, [(2, 3.0)]),
            # rows out of order are put in time order first
            ([v(2, 5, 0.1), v(1, 0, 0.5)], True, [(1, 0.5), (2, 0.1)]),
            ([v(1, 0, float("inf")), v(1, 1, 2.0)], True, [(1, 2.0)]),
        ],
    )  # fmt: skip
    def test_table(
        self, rows: list[Validation], smaller: bool, kept: list[tuple[int, float]]
    ) -> None:
        got = improving(rows, smaller_is_better=smaller)
        assert [(x.trial_id, x.value) for x in got] == kept

    @given(
        st.lists(
            st.tuples(st.integers(1, 5), st.integers(0, 100), st.floats(-1e6, 1e6)),
            max_size=40,
            unique_by=lambda r: (r[0], r[1]),  # one validation per trial and moment
        ),
        st.booleans(),
    )
    def test_each_kept_one_beats_all_before_it(
        self, raw: list[tuple[int, int, float]], smaller: bool
    ) -> None:
        rows = [v(t, m, x) for t, m, x in raw]
        kept = improving(rows, smaller_is_better=smaller)
        assert kept == improving(list(reversed(rows)), smaller_is_better=smaller)
        values = [k.value for k in kept]
        assert values == sorted(values, reverse=smaller) and len(set(values)) == len(values)
        if rows:
            best = min if smaller else max
            assert kept[-1].value == best(x for _, _, x in raw)
