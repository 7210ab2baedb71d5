"""The sticky launch error and pruning (reference §2.4): tables, then hypothesis against a model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioners.base import LaunchFailure, LaunchFailureKind
from provisioners.launch_errors import (
    LaunchErrorSettings,
    LaunchErrorState,
    record_failure,
    record_success,
    requests_to_prune,
    state_from_json,
    state_to_json,
    unschedulable_requests,
    visible_error,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SEC = timedelta(seconds=1)
THIRTY_THREE = LaunchErrorSettings(timeout=30 * SEC, retries=3)
CAPACITY = LaunchFailure(LaunchFailureKind.CAPACITY, "no g4dn.metal in us-east-1a")


def fail_at(times: list[datetime], knobs: LaunchErrorSettings) -> LaunchErrorState:
    state = LaunchErrorState()
    for at in times:
        state = record_failure(state, knobs, at, CAPACITY)
    return state


class TestStickyError:
    def test_fourth_failure_within_timeout_is_visible(self) -> None:
        """errors_test: with (30 s, 3) the first three failures give no error, the 4th does."""
        state = LaunchErrorState()
        for n in range(3):
            state = record_failure(state, THIRTY_THREE, T0 + n * SEC, CAPACITY)
            assert visible_error(state, THIRTY_THREE, T0 + n * SEC) is None
        state = record_failure(state, THIRTY_THREE, T0 + 3 * SEC, CAPACITY)
        error = visible_error(state, THIRTY_THREE, T0 + 3 * SEC)
        assert error is not None
        assert error.kind is LaunchFailureKind.CAPACITY
        assert error.message == CAPACITY.message
        assert error.failures == 4
        assert error.visible_until == T0 + 33 * SEC

    @pytest.mark.parametrize(
        ("after", "visible"),
        [(0, True), (1, True), (29, True), (30, False), (31, False), (3600, False)],
    )
    def test_visible_while_last_failure_is_younger_than_timeout(
        self, after: int, visible: bool
    ) -> None:
        state = fail_at([T0 + n * SEC for n in range(4)], THIRTY_THREE)
        last = T0 + 3 * SEC
        assert (visible_error(state, THIRTY_THREE, last + after * SEC) is not None) is visible

    def test_zero_settings_never_give_an_error(self) -> None:
        knobs = LaunchErrorSettings()
        state = fail_at([T0] * 50, knobs)
        assert visible_error(state, knobs, T0) is None

    def test_zero_retries_first_failure_is_visible(self) -> None:
        """P-fail: launches always fail with a 5 s timeout; the error shows after one tick."""
        knobs = LaunchErrorSettings(timeout=5 * SEC)
        assert visible_error(fail_at([T0], knobs), knobs, T0 + SEC) is not None

    def test_spaced_failures_restart_the_streak(self) -> None:
        state = fail_at([T0 + n * 30 * SEC for n in range(10)], THIRTY_THREE)
        assert state.failures == 1
        assert visible_error(state, THIRTY_THREE, T0 + 270 * SEC) is None

    def test_success_clears_it(self) -> None:
        state = fail_at([T0 + n * SEC for n in range(5)], THIRTY_THREE)
        assert visible_error(state, THIRTY_THREE, T0 + 5 * SEC) is not None
        cleared = record_success(state)
        assert visible_error(cleared, THIRTY_THREE, T0 + 5 * SEC) is None
        assert cleared == LaunchErrorState()

    def test_failure_given_as_text(self) -> None:
        knobs = LaunchErrorSettings(timeout=5 * SEC)
        error = visible_error(record_failure(LaunchErrorState(), knobs, T0, "boom"), knobs, T0)
        assert error is not None
        assert (error.kind, error.message) == (None, "boom")

    def test_state_is_immutable(self) -> None:
        before = LaunchErrorState()
        record_failure(before, THIRTY_THREE, T0, CAPACITY)
        assert before == LaunchErrorState()

    @pytest.mark.parametrize("knobs", [{"timeout": -SEC}, {"retries": -1}])
    def test_invalid_settings(self, knobs: dict[str, object]) -> None:
        with pytest.raises(ValueError):
            LaunchErrorSettings(**knobs)  # type: ignore[arg-type]

    def test_json_round_trip(self) -> None:
        state = fail_at([T0, T0 + SEC], THIRTY_THREE)
        assert state_from_json(state_to_json(state)) == state
        assert state_from_json(state_to_json(LaunchErrorState())) == LaunchErrorState()
        assert state_from_json({"kind": "gremlins", "failures": 2}).kind is None


class TestPruning:
    @pytest.mark.parametrize(
        ("pending", "listed", "spi", "expected"),
        [
            ({"a": 2, "b": 8, "c": 9}, 2, 4, ("c",)),
            ({"a": 1}, 0, 4, ("a",)),
            ({"zero": 0, "one": 1}, 0, 4, ("one",)),
            ({"a": 16}, 3, 8, ()),
            ({"a": 1}, 5, 0, ("a",)),
            ({}, 1, 1, ()),
        ],
    )
    def test_unschedulable(
        self, pending: dict[str, int], listed: int, spi: int, expected: tuple[str, ...]
    ) -> None:
        got = unschedulable_requests(pending, listed_instances=listed, slots_per_instance=spi)
        assert got == expected

    def test_prunes_only_while_the_error_is_visible(self) -> None:
        knobs = LaunchErrorSettings(timeout=30 * SEC)
        state = fail_at([T0], knobs)
        pending = {"big": 16, "small": 1}
        kwargs = {"listed_instances": 1, "slots_per_instance": 8}
        assert requests_to_prune(state, knobs, T0 + SEC, pending, **kwargs) == ("big",)
        assert requests_to_prune(state, knobs, T0 + 31 * SEC, pending, **kwargs) == ()
        assert requests_to_prune(LaunchErrorState(), knobs, T0, pending, **kwargs) == ()


# -- against a model -----------------------------------------------------------------------------

_GAPS = st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=12)
_KNOBS = st.builds(
    LaunchErrorSettings,
    timeout=st.integers(min_value=0, max_value=40).map(lambda s: s * SEC),
    retries=st.integers(min_value=0, max_value=5),
)


def model_visible(times: list[datetime], knobs: LaunchErrorSettings, now: datetime) -> bool:
    """Visible iff the trailing run of failures each < timeout after the previous is > retries
    long, and the last one is < timeout before now."""
    if knobs.timeout == timedelta(0):
        return False
    run = 1
    for earlier, later in pairwise(times):
        run = run + 1 if later - earlier < knobs.timeout else 1
    return run > knobs.retries and now - times[-1] < knobs.timeout


class TestAgainstModel:
    @settings(max_examples=300, deadline=None)
    @given(_GAPS, _KNOBS, st.integers(min_value=0, max_value=60))
    def test_matches_model(self, gaps: list[int], knobs: LaunchErrorSettings, wait: int) -> None:
        times: list[datetime] = []
        at = T0
        for gap in gaps:
            at += gap * SEC
            times.append(at)
        now = times[-1] + wait * SEC
        state = fail_at(times, knobs)
        error = visible_error(state, knobs, now)
        assert (error is not None) is model_visible(times, knobs, now)
        if error is not None:
            assert now < error.visible_until == times[-1] + knobs.timeout
            assert error.failures > knobs.retries

    @settings(max_examples=100, deadline=None)
    @given(_GAPS, _KNOBS)
    def test_success_always_clears(self, gaps: list[int], knobs: LaunchErrorSettings) -> None:
        state = fail_at([T0 + g * SEC for g in sorted(gaps)], knobs)
        assert visible_error(record_success(state), knobs, T0) is None
