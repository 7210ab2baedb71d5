"""All-gather rounds: N peers join, each gets everything in join order; a retry stays in its
round; a late arrival opens the next; bad peer counts are refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain import all_gather as ag
from controlplane.domain.errors import InvalidArgument


def test_a_round_fills_then_the_next_begins() -> None:
    s = ag.Gather()
    s, r = ag.join(s, "a", 2, {"rank": 0})
    assert not r.complete and r.number == 1
    s, r = ag.join(s, "a", 2, {"rank": 0})  # a retry: same round, not a second member
    assert len(r.members) == 1
    s, r = ag.join(s, "b", 2, {"rank": 1})
    assert r.complete and r.data == [{"rank": 0}, {"rank": 1}]
    s, again = ag.join(s, "a", 2, {"rank": 0})  # a retry after completion: the same answer
    assert again == r
    s, nxt = ag.join(s, "c", 2, {"x": 1})
    assert nxt.number == 2 and not nxt.complete


@pytest.mark.parametrize("peers", [0, -1, ag.MAX_PEERS + 1])
def test_bad_peer_counts(peers: int) -> None:
    with pytest.raises(InvalidArgument):
        ag.join(ag.Gather(), "a", peers, {})


def test_a_different_peer_count_mid_round_is_refused() -> None:
    s, _ = ag.join(ag.Gather(), "a", 3, {})
    with pytest.raises(InvalidArgument, match="differs"):
        ag.join(s, "b", 2, {})


@given(st.integers(1, 8), st.lists(st.integers(0, 20), min_size=1, max_size=60))
def test_every_round_completes_with_distinct_members_in_join_order(
    peers: int, arrivals: list[int]
) -> None:
    s = ag.Gather()
    completed: dict[int, ag.Round] = {}
    for who in arrivals:
        s, r = ag.join(s, f"p{who}", peers, who)
        if r.complete:
            completed[r.number] = r
    for r in completed.values():
        ids = [rid for rid, _ in r.members]
        assert len(ids) == peers == len(set(ids))
    assert len(s.done) <= ag.KEEP_DONE
