"""An all-gather among the processes of one allocation (Determined's AllocationAllGather and
NotifyContainerRunning): each of `num_peers` callers brings its data; once all have joined,
every one gets the whole list, in the order they joined.

Pure: the rounds of one allocation's gathers as values; the API layer waits and wakes. A caller
that retries (same request id) stays in its round and gets the same answer; a caller that
arrives after a round completed starts the next round.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from controlplane.domain.errors import InvalidArgument

MAX_PEERS = 4096


@dataclass(frozen=True)
class Round:
    number: int
    num_peers: int
    members: tuple[tuple[str, Any], ...] = ()  # (request id, data) in join order

    @property
    def complete(self) -> bool:
        return len(self.members) >= self.num_peers

    @property
    def data(self) -> list[Any]:
        return [d for _, d in self.members]


@dataclass(frozen=True)
class Gather:
    """One allocation's gather of one kind: the round filling now and those that completed."""

    current: Round | None = None
    done: tuple[Round, ...] = field(default=())  # the last few, for retries of their members


KEEP_DONE = 4


def join(state: Gather, request_id: str, num_peers: int, data: Any) -> tuple[Gather, Round]:
    """The state after `request_id` joins, and the round it is in."""
    if not 1 <= num_peers <= MAX_PEERS:
        raise InvalidArgument(f"numPeers must be between 1 and {MAX_PEERS}")
    for finished in state.done:
        if any(rid == request_id for rid, _ in finished.members):
            return state, finished
    current = state.current
    if current is not None and any(rid == request_id for rid, _ in current.members):
        return state, current
    if current is None:
        number = state.done[-1].number + 1 if state.done else 1
        current = Round(number=number, num_peers=num_peers)
    elif current.num_peers != num_peers:
        raise InvalidArgument(
            f"numPeers {num_peers} differs from the {current.num_peers} of this allocation's "
            "gather in progress"
        )
    current = replace(current, members=(*current.members, (request_id, data)))
    if current.complete:
        return Gather(None, (*state.done, current)[-KEEP_DONE:]), current
    return Gather(current, state.done), current
