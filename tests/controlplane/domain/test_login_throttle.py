"""The login throttle's decisions: tables for the delays, properties for what no history can do."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.domain.login_throttle import (
    Counters,
    Decision,
    LoginEvent,
    Strikes,
    ThrottlePolicy,
    decide,
    delay_s,
)

POLICY = ThrottlePolicy(
    free_per_user=3, free_per_address=6, base_delay_s=1.0, max_delay_s=60.0, decay_s=600.0
)
ATTEMPT, SUCCEEDED = LoginEvent.ATTEMPT, LoginEvent.SUCCEEDED


class World:
    """The counters of every key, kept as the store keeps them, for histories in tests."""

    def __init__(self, policy: ThrottlePolicy = POLICY) -> None:
        self.policy = policy
        self.users: dict[str, Strikes] = {}
        self.addresses: dict[str, Strikes] = {}

    def counters(self, user: str, address: str) -> Counters:
        return Counters(self.users.get(user), self.addresses.get(address))

    def send(self, event: LoginEvent, user: str, address: str, now: float) -> Decision:
        decision = decide(self.counters(user, address), event, now, self.policy)
        for table, key, value in (
            (self.users, user, decision.counters.user),
            (self.addresses, address, decision.counters.address),
        ):
            if value is None:
                table.pop(key, None)
            else:
                table[key] = value
        return decision

    def fail(self, user: str, address: str, now: float) -> Decision:
        """An attempt whose password turns out wrong: nothing follows the admission."""
        return self.send(ATTEMPT, user, address, now)


class TestDelays:
    @pytest.mark.parametrize(
        ("count", "expected"),
        [(0, 0), (2, 0), (3, 1), (4, 2), (5, 4), (8, 32), (9, 60), (50, 60), (10**6, 60)],
    )
    def test_free_attempts_then_doubling_up_to_the_cap(self, count: int, expected: float) -> None:
        assert delay_s(count, POLICY.free_per_user, POLICY) == expected

    def test_one_user_from_one_address(self) -> None:
        """Three free failures, then 1 s, 2 s, 4 s after the last admitted attempt."""
        w = World()
        assert [w.fail("u", "a", 0.0).allowed for _ in range(3)] == [True, True, True]
        refused = w.fail("u", "a", 0.2)
        assert (refused.allowed, refused.retry_after_s) == (False, 1)
        assert w.fail("u", "a", 1.0).allowed  # 1 s after the third
        assert w.fail("u", "a", 2.5).retry_after_s == 1  # 2 s after t=1: 0.5 s left, rounded up
        assert w.fail("u", "a", 3.0).allowed
        assert w.fail("u", "a", 3.0).retry_after_s == 4

    def test_refused_attempts_do_not_lengthen_the_wait(self) -> None:
        w = World()
        for _ in range(3):
            w.fail("u", "a", 0.0)
        for t in (0.1, 0.5, 0.9):
            assert not w.fail("u", "a", t).allowed
        assert w.fail("u", "a", 1.0).allowed

    def test_success_clears_the_user_but_gives_the_address_back_one_attempt_only(self) -> None:
        w = World()
        for i in range(5):  # five names from one address: the address has 5 of its 6
            w.fail(f"n{i}", "a", 0.0)
        assert w.send(ATTEMPT, "me", "a", 0.0).allowed  # 6 of 6 …
        w.send(SUCCEEDED, "me", "a", 0.0)  # … and back to 5: a valid account wipes nothing
        assert w.addresses["a"].count == 5 and "me" not in w.users
        assert w.fail("x", "a", 0.0).allowed
        assert not w.fail("y", "a", 0.0).allowed

    def test_success_resets_the_users_counter(self) -> None:
        w = World()
        for _ in range(3):
            w.fail("u", "a", 0.0)
        assert w.send(ATTEMPT, "u", "b", 1.0).allowed
        w.send(SUCCEEDED, "u", "b", 1.0)
        assert "u" not in w.users
        assert [w.fail("u", "c", 1.0).allowed for _ in range(3)] == [True] * 3

    def test_quiet_time_forgives_one_attempt_per_decay(self) -> None:
        w = World()
        for t in (0.0, 0.0, 0.0, 1.0, 3.0):  # five counted: the next waits 4 s
            assert w.fail("u", "a", t).allowed
        assert w.users["u"].current(3.0 + 599.0, POLICY.decay_s) == 5
        assert w.users["u"].current(3.0 + 600.0, POLICY.decay_s) == 4
        assert w.users["u"].current(3.0 + 6000.0, POLICY.decay_s) == 0
        w.fail("u", "a", 3.0 + 1200.0)  # 3 left, plus this one: 4
        assert w.users["u"].count == 4

    def test_a_clock_that_steps_back_forgives_nothing(self) -> None:
        w = World()
        for _ in range(3):
            w.fail("u", "a", 100.0)
        refused = w.fail("u", "a", 50.0)
        assert not refused.allowed and refused.retry_after_s == 51

    def test_the_address_limit_catches_a_spray_of_names(self) -> None:
        w = World()
        assert all(w.fail(f"name{i}", "a", 0.0).allowed for i in range(6))
        assert not w.fail("name6", "a", 0.0).allowed
        assert w.fail("name6", "b", 0.0).allowed  # another address is untouched

    def test_policy_is_checked(self) -> None:
        with pytest.raises(ValueError):
            ThrottlePolicy(base_delay_s=10, max_delay_s=5)
        with pytest.raises(ValueError):
            ThrottlePolicy(free_per_user=0)


# A history: (user, address, event, seconds since the previous step).
users = st.sampled_from(["alice", "bob", "root", "ghost"])
addresses = st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.3"])
steps = st.lists(
    st.tuples(
        users,
        addresses,
        st.sampled_from([ATTEMPT, ATTEMPT, ATTEMPT, SUCCEEDED]),
        st.floats(min_value=0, max_value=120, allow_nan=False),
    ),
    max_size=200,
)


def _admitted_failures(history: list[tuple[str, str, LoginEvent, float]]) -> list[float]:
    """Times at which failed guesses (attempts never followed by a success) were admitted for
    'root', which never logs in successfully; guesses come from every address."""
    w, now, admitted = World(), 0.0, []
    for user, address, event, gap in history:
        now += gap
        if event is SUCCEEDED and user != "root":
            if w.send(ATTEMPT, user, address, now).allowed:
                w.send(SUCCEEDED, user, address, now)
        elif w.fail("root", address, now).allowed:
            admitted.append(now)
    return admitted


def _most_in_window(times: list[float], window: float) -> int:
    best, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] >= window:
            start += 1
        best = max(best, end - start + 1)
    return best


class TestProperties:
    @settings(max_examples=300, deadline=None)
    @given(steps, st.sampled_from([10.0, 60.0, 600.0]))
    def test_never_more_guesses_in_a_window_than_the_policy_allows(
        self, history: list[tuple[str, str, LoginEvent, float]], window: float
    ) -> None:
        """Guesses at one user, from any mix of addresses, never beat the free ones, the
        doublings up to the cap and one per cap (windows up to `decay_s`: forgiving needs that
        much quiet, so it happens before a window, never inside one)."""
        times = _admitted_failures(history)
        p = POLICY
        doublings = math.ceil(math.log2(p.max_delay_s / p.base_delay_s))
        bound = p.free_per_user + doublings + math.ceil(window / p.max_delay_s)
        assert _most_in_window(times, window) <= bound

    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(
            st.tuples(
                st.sampled_from(["alice", "bob", "victim"]),
                st.sampled_from(["10.0.0.1", "10.0.0.2"]),
                st.booleans(),
                st.floats(min_value=0, max_value=30, allow_nan=False),
            ),
            max_size=200,
        )
    )
    def test_other_addresses_throttle_a_user_only_through_that_users_own_counter(
        self, history: list[tuple[str, str, bool, float]]
    ) -> None:
        """Whatever happens at other addresses, 'victim' at 10.9.9.9 is refused only when the
        victim's own counter has used up its free attempts; with the victim untouched, never."""
        w, now = World(), 0.0
        for user, address, succeeds, gap in history:
            now += gap
            if w.send(ATTEMPT, user, address, now).allowed and succeeds:
                w.send(SUCCEEDED, user, address, now)
        decision = decide(w.counters("victim", "10.9.9.9"), ATTEMPT, now, POLICY)
        victim = w.users.get("victim")
        if not decision.allowed:
            assert victim is not None
            assert victim.current(now, POLICY.decay_s) >= POLICY.free_per_user
        counters = Counters(None, w.addresses.get("10.9.9.9"))
        assert decide(counters, ATTEMPT, now, POLICY).allowed  # a name nobody else tried

    @settings(max_examples=200, deadline=None)
    @given(steps)
    def test_a_success_always_clears_the_users_counter(
        self, history: list[tuple[str, str, LoginEvent, float]]
    ) -> None:
        w, now = World(), 0.0
        for user, address, event, gap in history:
            now += gap
            w.send(event, user, address, now)
            if event is SUCCEEDED:
                assert user not in w.users

    @settings(max_examples=200, deadline=None)
    @given(steps)
    def test_a_refused_attempt_changes_nothing_and_says_how_long(
        self, history: list[tuple[str, str, LoginEvent, float]]
    ) -> None:
        w, now = World(), 0.0
        for user, address, event, gap in history:
            now += gap
            before = w.counters(user, address)
            decision = w.send(event, user, address, now)
            if not decision.allowed:
                assert decision.counters == before
                assert 1 <= decision.retry_after_s <= math.ceil(POLICY.max_delay_s)
                later = now + decision.retry_after_s
                assert decide(before, ATTEMPT, later, POLICY).allowed
