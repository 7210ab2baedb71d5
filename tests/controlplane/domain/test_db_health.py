"""The database's health as a loop sees it: one note when it goes away, one when it is back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controlplane.domain.db_health import (
    TRANSITIONS,
    DbHealth,
    DbState,
    Note,
    Outcome,
    observe,
)

OK, DOWN, BUG = Outcome.OK, Outcome.DB_UNAVAILABLE, Outcome.OTHER_ERROR
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_table_covers_every_state_and_outcome() -> None:
    assert set(TRANSITIONS) == {(s, o) for s in DbState for o in Outcome}


@pytest.mark.parametrize(
    ("outcomes", "notes"),
    [
        ([OK, OK, OK], [None, None, None]),
        ([DOWN], [Note.WENT_DOWN]),
        ([DOWN, DOWN, DOWN, DOWN], [Note.WENT_DOWN, None, None, None]),
        ([DOWN, DOWN, OK, OK], [Note.WENT_DOWN, None, Note.CAME_BACK, None]),
        ([DOWN, BUG, DOWN, OK], [Note.WENT_DOWN, None, None, Note.CAME_BACK]),
        ([BUG, BUG, OK], [Note.FAILED, Note.FAILED, None]),
        ([BUG, DOWN, OK, BUG], [Note.FAILED, Note.WENT_DOWN, Note.CAME_BACK, Note.FAILED]),
        ([DOWN, OK, DOWN, OK], [Note.WENT_DOWN, Note.CAME_BACK, Note.WENT_DOWN, Note.CAME_BACK]),
    ],
)
def test_notes_for_a_run_of_passes(outcomes: list[Outcome], notes: list[Note | None]) -> None:
    health = DbHealth()
    got = []
    for i, outcome in enumerate(outcomes):
        health, note = observe(health, outcome, T0 + timedelta(seconds=i))
        got.append(note)
    assert got == notes


def test_an_outage_counts_its_failures_and_its_length() -> None:
    health = DbHealth()
    for i in range(4):
        health, _ = observe(health, DOWN if i % 2 == 0 else BUG, T0 + timedelta(seconds=i))
    assert (health.state, health.failures, health.down_since) == (DbState.DOWN, 4, T0)
    assert health.downtime(T0 + timedelta(seconds=7)) == timedelta(seconds=7)
    back, note = observe(health, OK, T0 + timedelta(seconds=7))
    assert note is Note.CAME_BACK and back == DbHealth()
