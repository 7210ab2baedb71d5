"""The access-token rules: lifespans as Determined's CLI sends them, who manages whose."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain import access_tokens as rules
from controlplane.domain.errors import InvalidArgument, PermissionDenied


@pytest.mark.parametrize(
    ("text", "span"),
    [
        (None, timedelta(days=30)),
        ("", timedelta(days=30)),
        ("720h", timedelta(days=30)),  # `det token create -e 30`
        ("24h", timedelta(days=1)),
        ("1h30m", timedelta(minutes=90)),
        ("-1", rules.NEVER),  # `-e -1`: never expires
        ("2000000h", rules.NEVER),  # capped where every database can store it
    ],
)
def test_lifespans(text: str | None, span: timedelta) -> None:
    assert rules.lifespan(text) == span


@pytest.mark.parametrize("text", ["abc", "-5h", "0s", "5", "h", "1d", "\x00"])
def test_bad_lifespans_are_refused_with_determineds_words(text: str) -> None:
    with pytest.raises(InvalidArgument, match="Go-formatted duration"):
        rules.lifespan(text)


def test_descriptions() -> None:
    assert rules.description(None) is None
    assert rules.description("ci bot") == "ci bot"
    for bad in ("a\x00b", "x" * 1025):
        with pytest.raises(InvalidArgument):
            rules.description(bad)


@pytest.mark.parametrize(
    ("actor", "owner", "allowed"),
    [
        (rules.Actor(2, admin=False), 2, True),
        (rules.Actor(2, admin=False), 3, False),
        (rules.Actor(1, admin=True), 3, True),
    ],
)
def test_who_manages_whose(actor: rules.Actor, owner: int, allowed: bool) -> None:
    if allowed:
        rules.may_manage(actor, owner)
    else:
        with pytest.raises(PermissionDenied):
            rules.may_manage(actor, owner)


NOW = datetime(2026, 12, 7, tzinfo=UTC)


@given(
    st.timedeltas(min_value=timedelta(days=-400), max_value=timedelta(days=400)),
    st.booleans(),
)
def test_a_token_is_active_only_unrevoked_and_unexpired(left: timedelta, revoked: bool) -> None:
    active = rules.is_active(NOW + left, NOW if revoked else None, NOW)
    assert active == (not revoked and left > timedelta(0))
