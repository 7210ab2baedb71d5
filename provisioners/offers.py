"""Offers: what a pool may launch (instance type x location x market, with slots and price),
and the memory of capacity errors that makes an offer cold for a while.

An offer's `location` is where its instances land together: an AWS subnet (one subnet lies in
one availability zone; "" is the VPC's default subnet) or a GCE zone. A gang launched into one
location is launched into one zone.

A capacity error (the cloud has no such machines, a quota, a spot market that cannot fill)
marks that one offer cold: it is not tried again until its backoff passes, and the backoff
doubles with each error in a row (1, 2, 4 … minutes up to a cap). A launch that gets machines
from the offer ends its streak. Everything here is pure: `now` comes in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from provisioners.base import LaunchFailureKind

SPOT, ON_DEMAND = "spot", "on-demand"
# Kinds of launch failure that say "not this offer, now" rather than "your config is wrong" or
# "try the same call again": they make the offer cold and the next offer is tried.
COLD_KINDS = frozenset(
    {LaunchFailureKind.CAPACITY, LaunchFailureKind.PRICE, LaunchFailureKind.QUOTA}
)


@dataclass(frozen=True)
class Offer:
    """One way to get machines for a pool.

    `fallback` marks an on-demand offer that a spot pool may use only after its work waited
    `OfferSettings.on_demand_after`. `rank` is the offer's place in the config (tie-break).
    """

    instance_type: str
    location: str
    slots: int
    spot: bool
    price_per_hour: float
    rank: int = 0
    fallback: bool = False
    gpu_type: str = ""
    gpu_num: int = 0

    @property
    def market(self) -> str:
        return SPOT if self.spot else ON_DEMAND

    @property
    def key(self) -> str:
        """Identifies the offer in cold marks and listings: 'type@location/market'."""
        return offer_key(self.instance_type, self.location, spot=self.spot)

    @property
    def label(self) -> str:
        return f"{self.instance_type} in {self.location or 'the default subnet'} ({self.market})"


def offer_key(instance_type: str, location: str, *, spot: bool) -> str:
    return f"{instance_type}@{location or 'default'}/{SPOT if spot else ON_DEMAND}"


@dataclass(frozen=True)
class OfferSettings:
    """Per-pool knobs of ranking and failover (provider keys of the same names)."""

    backoff: timedelta = timedelta(minutes=1)
    backoff_max: timedelta = timedelta(minutes=30)
    max_hourly_cost: float | None = None
    on_demand_after: timedelta | None = None

    def __post_init__(self) -> None:
        if self.backoff <= timedelta(0) or self.backoff_max < self.backoff:
            raise ValueError("capacity backoff must be > 0 and its maximum >= it")
        if self.max_hourly_cost is not None and self.max_hourly_cost < 0:
            raise ValueError("max_hourly_cost must not be negative")


@dataclass(frozen=True)
class ColdOffer:
    """An offer's streak of capacity errors: `failures` in a row, the last at `last_error_at`."""

    failures: int
    last_error_at: datetime
    cold_until: datetime
    reason: str


@dataclass(frozen=True)
class OfferState:
    """What ticks remember about offers: the cold marks, and since when work waits unmet
    (for the spot → on-demand fallback)."""

    cold: Mapping[str, ColdOffer] = field(default_factory=dict[str, ColdOffer])
    unmet_since: datetime | None = None

    def cold_until(self, key: str, now: datetime) -> datetime | None:
        """When the offer may be tried again; None when it may be tried now."""
        mark = self.cold.get(key)
        if mark is None or mark.cold_until <= now:
            return None
        return mark.cold_until


def backoff_for(failures: int, settings: OfferSettings) -> timedelta:
    """base x 2^(failures-1), capped."""
    exponent = min(max(failures, 1) - 1, 30)
    return min(settings.backoff * (2**exponent), settings.backoff_max)


def record_capacity_error(
    state: OfferState, settings: OfferSettings, key: str, now: datetime, reason: str
) -> OfferState:
    """The state after the offer `key` answered a capacity error at `now`."""
    previous = state.cold.get(key)
    failures = previous.failures + 1 if previous is not None else 1
    mark = ColdOffer(failures, now, now + backoff_for(failures, settings), reason)
    return replace(state, cold={**state.cold, key: mark})


def record_offer_success(state: OfferState, key: str) -> OfferState:
    """The offer gave machines: its streak ends."""
    if key not in state.cold:
        return state
    return replace(state, cold={k: v for k, v in state.cold.items() if k != key})


def offer_state_to_json(state: OfferState) -> dict[str, Any]:
    return {
        "cold": {
            key: {
                "failures": mark.failures,
                "last_error_at": mark.last_error_at.isoformat(),
                "cold_until": mark.cold_until.isoformat(),
                "reason": mark.reason,
            }
            for key, mark in sorted(state.cold.items())
        },
        "unmet_since": state.unmet_since.isoformat() if state.unmet_since else None,
    }


def offer_state_from_json(data: Mapping[str, Any]) -> OfferState:
    """The inverse of `offer_state_to_json`; missing or malformed parts read as empty."""
    cold: dict[str, ColdOffer] = {}
    for key, mark in (data.get("cold") or {}).items():
        try:
            cold[key] = ColdOffer(
                failures=int(mark["failures"]),
                last_error_at=datetime.fromisoformat(mark["last_error_at"]),
                cold_until=datetime.fromisoformat(mark["cold_until"]),
                reason=str(mark.get("reason", "")),
            )
        except (KeyError, TypeError, ValueError):
            continue
    since = data.get("unmet_since")
    return OfferState(
        cold=cold, unmet_since=datetime.fromisoformat(since) if isinstance(since, str) else None
    )
