"""Login throttling: how many password guesses a user name, or a client address, gets.

Pure: the two counters an attempt touches, an event and `now` (seconds) in; a verdict and the
new counters out. The store that keeps counters between requests is
`controlplane.services.login_throttle`; docs/security.md describes the behaviour.

Every key gets `free` attempts; after that each further attempt must wait a delay that doubles
per attempt (`base_delay_s`, twice that, four times, … up to `max_delay_s`), measured from the
last attempt. Quiet time forgives: one counted attempt per `decay_s` since the last one. A success
clears the user's counter.

An attempt is counted when it is admitted, before its password is checked, and a success takes
it back. Counting only after a failure would let many concurrent guesses pass the check together
while the first of them is still hashing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True)
class ThrottlePolicy:
    free_per_user: int = 5
    free_per_address: int = 30
    base_delay_s: float = 1.0
    max_delay_s: float = 300.0
    decay_s: float = 600.0

    def __post_init__(self) -> None:
        if self.free_per_user < 1 or self.free_per_address < 1:
            raise ValueError("each key needs at least one free attempt")
        if not 0 < self.base_delay_s <= self.max_delay_s:
            raise ValueError("0 < base_delay_s <= max_delay_s")
        if self.decay_s <= 0:
            raise ValueError("decay_s must be positive")


@dataclass(frozen=True, slots=True)
class Strikes:
    """Attempts counted against one key and when the last one was admitted."""

    count: int
    last_s: float

    def current(self, now: float, decay_s: float) -> int:
        """The count after forgiving one attempt per `decay_s` of quiet."""
        quiet = max(0.0, now - self.last_s)  # a clock that stepped back forgives nothing
        return max(0, self.count - int(quiet // decay_s))

    def blocked_until(self, now: float, free: int, policy: ThrottlePolicy) -> float:
        return self.last_s + delay_s(self.current(now, policy.decay_s), free, policy)


def delay_s(count: int, free: int, policy: ThrottlePolicy) -> float:
    """The wait after `count` counted attempts: none for the free ones, then doubling."""
    if count < free:
        return 0.0
    doublings = min(count - free, 64)  # 2**64 times base is past any cap; keeps the float finite
    return min(policy.max_delay_s, policy.base_delay_s * 2.0**doublings)


class LoginEvent(Enum):
    ATTEMPT = "attempt"  # a login is about to check a password: admit it or not
    SUCCEEDED = "succeeded"  # the admitted attempt had the right password


@dataclass(frozen=True, slots=True)
class Counters:
    """The state one login touches: its user name's counter and its address's (None: clean)."""

    user: Strikes | None = None
    address: Strikes | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    retry_after_s: int  # whole seconds to wait (Retry-After); 0 when allowed
    counters: Counters
    # Attempts already counted against the name and the address when this one was admitted:
    # 0 for a clean record. The master checks lower ranks first (services/password_checks.py).
    rank: int = 0


def decide(state: Counters, event: LoginEvent, now: float, policy: ThrottlePolicy) -> Decision:
    if event is LoginEvent.SUCCEEDED:
        return Decision(True, 0, _after_success(state, now, policy))
    wait = max(
        _wait(state.user, now, policy.free_per_user, policy),
        _wait(state.address, now, policy.free_per_address, policy),
    )
    if wait > 0:
        # A refused attempt is not a guess, so it does not lengthen the wait: a stream of them
        # cannot keep a user locked out beyond the delay its counted attempts earned.
        return Decision(False, max(1, math.ceil(wait)), state)
    user, address = _counted(state.user, now, policy), _counted(state.address, now, policy)
    return Decision(True, 0, Counters(user, address), rank=user.count - 1 + address.count - 1)


def _wait(strikes: Strikes | None, now: float, free: int, policy: ThrottlePolicy) -> float:
    if strikes is None:
        return 0.0
    return max(0.0, strikes.blocked_until(now, free, policy) - now)


def _counted(strikes: Strikes | None, now: float, policy: ThrottlePolicy) -> Strikes:
    before = 0 if strikes is None else strikes.current(now, policy.decay_s)
    return Strikes(before + 1, now)


def _after_success(state: Counters, now: float, policy: ThrottlePolicy) -> Counters:
    """The user's counter is cleared; the address only gets back the attempt that succeeded, so
    an attacker with one valid account cannot wipe its address's record of other guesses."""
    address = state.address
    if address is not None:
        left = Strikes(address.count - 1, address.last_s)  # the same clock: no double decay
        address = left if left.current(now, policy.decay_s) > 0 else None
    return Counters(user=None, address=address)
