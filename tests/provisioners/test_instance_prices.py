"""Each listed instance's price from the offer it came from, and the changes to stored
instance lives a tick's listing makes (tables)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from provisioners.base import Instance, InstanceState
from provisioners.instance_prices import (
    LifetimeChanges,
    PricedInstance,
    lifetime_changes,
    offer_of,
    price_instance,
)
from provisioners.offers import Offer

T0 = datetime(2026, 12, 1, tzinfo=UTC)
SPOT = Offer("g5.xlarge", "subnet-a", 1, True, 0.4, rank=0)
ON_DEMAND = Offer("g5.12xlarge", "subnet-b", 4, False, 5.672, rank=1)
OFFERS = (SPOT, ON_DEMAND)


def inst(i: str, state: InstanceState = InstanceState.RUNNING, key: str | None = None) -> Instance:
    return Instance(i, i, state, T0, offer_key=key)


@pytest.mark.parametrize(
    ("key", "offer"),
    [
        (ON_DEMAND.key, ON_DEMAND),
        (SPOT.key, SPOT),
        (None, SPOT),  # the cloud did not say: the pool's first offer
        ("p3.2xlarge@subnet-z/spot", None),  # no offer of the config (it changed since)
    ],
)
def test_offer_of(key: str | None, offer: Offer | None):
    assert offer_of(inst("i-1", key=key), OFFERS) == offer


def test_prices():
    assert price_instance(inst("i-1", key=ON_DEMAND.key), OFFERS, 0) == PricedInstance(
        inst("i-1", key=ON_DEMAND.key), ON_DEMAND.key, "g5.12xlarge", 4, 5.672
    )
    unknown = price_instance(inst("i-2", key="p3.2xlarge@subnet-z/spot"), OFFERS, 2)
    assert (unknown.instance_type, unknown.slots, unknown.price_per_hour) == ("p3.2xlarge", 2, 0)
    assert price_instance(inst("i-3"), (), 1).price_per_hour == 0.0


def _priced(*instances: Instance) -> list[PricedInstance]:
    return [price_instance(i, OFFERS, 1) for i in instances]


S = InstanceState
CASES = [
    # (listed, known {id: ended}, opened ids, ended ids, reopened ids)
    ([inst("i-1")], {}, ["i-1"], [], []),
    ([inst("i-1")], {"i-1": False}, [], [], []),
    ([], {"i-1": False}, [], ["i-1"], []),
    ([inst("i-1", S.TERMINATING)], {"i-1": False}, [], ["i-1"], []),
    ([inst("i-1", S.STOPPED)], {}, [], [], []),
    ([inst("i-1", S.SPOT_REQUEST_PENDING)], {}, [], [], []),  # no machine yet
    ([inst("i-1")], {"i-1": True}, [], [], ["i-1"]),  # missed by one list, back again
    ([inst("i-2"), inst("i-1", S.STOPPING)], {"i-1": False, "i-3": True}, ["i-2"], ["i-1"], []),
]


@pytest.mark.parametrize(("listed", "known", "opened", "ended", "reopened"), CASES)
def test_lifetime_changes(listed, known, opened, ended, reopened):
    changes = lifetime_changes(_priced(*listed), known)
    assert [p.instance.id for p in changes.opened] == opened
    assert list(changes.ended) == ended and list(changes.reopened) == reopened
    assert isinstance(changes, LifetimeChanges)
