"""When to dial the master again after a failed try, and when to give up (pure).

Determined's agent makes `agent_reconnect_attempts` tries `agent_reconnect_backoff` seconds apart
(5 x 5 s) and exits. A master restart, or a master whose database is away (it closes the socket
with 1013, "try again later", its 503), can outlast that, so the agent also keeps trying for
`master_outage_s` seconds (10 minutes by default) from the first failure: it gives up only once
both the tries and the time are spent. Pauses double from FIRST_S up to the backoff (at least
OUTAGE_PAUSE_S once only the outage time keeps the agent trying), and each is stretched by up
to half at random, so that agents that lost the master together do not all dial at once.
"""

from __future__ import annotations

from dataclasses import dataclass

FIRST_S = 0.5
OUTAGE_PAUSE_S = 1.0  # the least pause once the tries are spent: never a busy loop


@dataclass(frozen=True)
class RedialPolicy:
    attempts: int  # agent_reconnect_attempts
    backoff_s: float  # agent_reconnect_backoff: the longest pause between tries
    outage_s: float  # master_outage_s: keep trying at least this long after the first failure


def plan_redial(
    policy: RedialPolicy, failures: int, elapsed_s: float, jitter: float
) -> float | None:
    """The pause before the next try after `failures` failed ones, `elapsed_s` seconds after the
    first; None to give up. `jitter` is a number in [0, 1) (random at the caller)."""
    if failures >= policy.attempts and elapsed_s >= policy.outage_s:
        return None
    cap = policy.backoff_s if failures < policy.attempts else max(policy.backoff_s, OUTAGE_PAUSE_S)
    base = min(cap, FIRST_S * 2 ** min(failures, 30))
    return base * (1 + jitter / 2)
