"""What every cloud provider offers the master: launch, terminate, list (reference §2.1).

The contract, shared by AWS, GCP and the in-memory fake (tests/provisioners/contract.py):

- Calls are synchronous and may block on the network; the master runs them in a worker thread
  and never holds a database transaction across one.
- `launch` is idempotent by `request_id`: the master stores the id before the call, so after a
  crash it repeats the same call with the same id and the cloud creates nothing twice.
- Everything is scoped by the provider's tags or labels: `list` returns only the instances this
  master launched for this pool, and `terminate` refuses nothing it did not launch.
- The cloud is eventually consistent: an instance just launched may be missing from the next
  `list`, and one just terminated may still show. The scale decider tolerates both.
- `terminate` of an id that is already gone is not an error.
- Launch failures raise `LaunchFailure`; problems a cloud reports later (a spot request that
  cannot be fulfilled) come back on the listed instance's `problem`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from provisioners.offers import Offer


class InstanceState(StrEnum):
    """Cloud states as the decider sees them (reference §2.3)."""

    SPOT_REQUEST_PENDING = "SpotRequestPendingAWS"
    STARTING = "Starting"
    RUNNING = "Running"
    STOPPING = "Stopping"
    STOPPED = "Stopped"
    TERMINATING = "Terminating"
    UNKNOWN = "Unknown"


@dataclass(frozen=True)
class Instance:
    """One machine (or a pending spot request standing for one) as the cloud lists it.

    `id` is what `terminate` takes; `agent_name` is the agent id the machine's agent registers
    under (the EC2 instance id, the GCE instance name).
    """

    id: str
    agent_name: str
    state: InstanceState
    launch_time: datetime
    spot: bool = False
    problem: str | None = None
    offer_key: str | None = None  # type@location/market, when the provider can tell


class LaunchFailureKind(StrEnum):
    CAPACITY = "capacity"  # the cloud has no such machines now (spot or on-demand)
    PRICE = "price"  # the spot price is above the maximum
    QUOTA = "quota"  # an account limit
    CONFIG = "config"  # bad parameters: the user must act
    TRANSIENT = "transient"  # network, throttling, timeouts


class LaunchFailure(Exception):
    """A launch the cloud refused; `kind` says whether waiting or a fallback pool can help."""

    def __init__(self, kind: LaunchFailureKind, message: str) -> None:
        super().__init__(f"{kind.value}: {message}")
        self.kind = kind
        self.message = message

    @property
    def capacity_unavailable(self) -> bool:
        return self.kind in (LaunchFailureKind.CAPACITY, LaunchFailureKind.PRICE)


class Provisioner(Protocol):
    """A cloud that launches and terminates this pool's agents."""

    @property
    def slots_per_instance(self) -> int: ...

    def launch(self, count: int, *, request_id: str) -> list[str]:
        """Start `count` instances; returns the ids the cloud gave (possibly fewer).

        Repeating a call with the same `request_id` creates nothing new.
        """
        ...

    def terminate(self, instance_ids: Sequence[str]) -> None: ...

    def list(self) -> list[Instance]: ...


@dataclass(frozen=True)
class OfferError:
    """One offer the cloud refused during a launch, and why (e.g. InsufficientInstanceCapacity
    in one subnet of an EC2 Fleet call)."""

    offer_key: str
    kind: LaunchFailureKind
    message: str


@dataclass(frozen=True)
class OfferLaunchResult:
    """What a launch over offers gave: instance ids per offer, and the offers that failed."""

    launched: dict[str, list[str]]
    errors: tuple[OfferError, ...] = ()

    @property
    def instance_ids(self) -> list[str]:
        return [i for ids in self.launched.values() for i in ids]


class OfferProvisioner(Provisioner, Protocol):
    """A provisioner that launches by offer (instance type x subnet/zone x market).

    `launch_offers` gets the planner's ranked choices as (offer, count) pairs. It may try
    only the first (one RunInstances or bulkInsert) or hand several to the cloud's fleet API;
    offers it tried and the cloud refused come back in `errors`, never raised. It raises
    LaunchFailure only when the call as a whole failed (credentials, bad parameters, network).
    """

    def launch_offers(
        self, choices: Sequence[tuple[Offer, int]], *, request_id: str
    ) -> OfferLaunchResult: ...
