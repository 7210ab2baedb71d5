"""The login throttle's memory: counters per user name and per client address, in this process.

The decisions are `controlplane.domain.login_throttle.decide`; this class only keeps the counters
between requests. Bounded: each map holds at most `max_keys` entries and drops the one whose last
attempt is oldest (the most forgiven), so spraying names or addresses cannot grow it without
limit. Names are counted whether or not the user exists: a 429 for existing names only would tell
which ones exist. One master process, one memory (a master with several workers will share it
later; see docs/security.md).

Not thread-safe: the master calls it from its event loop only, without awaiting in between.
"""

from __future__ import annotations

from collections import OrderedDict

from controlplane.domain.login_throttle import (
    Counters,
    Decision,
    LoginEvent,
    Strikes,
    ThrottlePolicy,
    decide,
)

MAX_NAME_KEY = 256  # no user name is longer; longer ones are still counted, by their prefix


class LoginThrottle:
    def __init__(self, policy: ThrottlePolicy | None = None, *, max_keys: int = 50_000) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self.policy = policy or ThrottlePolicy()
        self.max_keys = max_keys
        self._users: OrderedDict[str, Strikes] = OrderedDict()
        self._addresses: OrderedDict[str, Strikes] = OrderedDict()

    def admit(self, username: str, address: str, now: float) -> Decision:
        """Allowed: check the password (the attempt is now counted); else wait retry_after_s."""
        return self._apply(username, address, LoginEvent.ATTEMPT, now)

    def succeeded(self, username: str, address: str, now: float) -> None:
        """The admitted attempt had the right password."""
        self._apply(username, address, LoginEvent.SUCCEEDED, now)

    def sizes(self) -> tuple[int, int]:
        """(user names, addresses) currently remembered."""
        return len(self._users), len(self._addresses)

    def _apply(self, username: str, address: str, event: LoginEvent, now: float) -> Decision:
        name = username[:MAX_NAME_KEY]
        state = Counters(user=self._users.get(name), address=self._addresses.get(address))
        decision = decide(state, event, now, self.policy)
        if decision.counters != state:
            self._store(self._users, name, decision.counters.user)
            self._store(self._addresses, address, decision.counters.address)
        return decision

    def _store(self, counters: OrderedDict[str, Strikes], key: str, value: Strikes | None) -> None:
        if value is None:
            counters.pop(key, None)
            return
        counters[key] = value
        counters.move_to_end(key)
        while len(counters) > self.max_keys:
            counters.popitem(last=False)
