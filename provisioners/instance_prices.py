"""Each listed instance's price (from the offer it was launched from), and how the stored
instance lifetimes change when the cloud's list changes. Pure: the master's loop stores the
result (controlplane/services/provisioning/store.py), cost sums read it.

An instance is charged from its launch until the first tick that no longer lists it running:
listed stopping, stopped or terminating, or not listed at all. The cloud's list is eventually
consistent, so an instance that was missed by one list and shows again is re-opened: the gap
is charged, as the cloud charged it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from provisioners.base import Instance, InstanceState
from provisioners.offers import Offer

# States in which the cloud no longer charges for the machine (a pending spot request has no
# machine yet, so it is not charged either: it is simply not recorded until fulfilled).
ENDED = frozenset({InstanceState.STOPPING, InstanceState.STOPPED, InstanceState.TERMINATING})
NOT_YET = frozenset({InstanceState.SPOT_REQUEST_PENDING})


@dataclass(frozen=True)
class PricedInstance:
    instance: Instance
    offer_key: str | None
    instance_type: str
    slots: int
    price_per_hour: float  # 0: unknown


def offer_of(instance: Instance, offers: Sequence[Offer]) -> Offer | None:
    """The offer the instance was launched from: by its offer key; an instance whose cloud did
    not say gets the pool's first offer (a one-type pool's only one), as the decider counts it;
    None when the key names no offer of the pool's config (the config changed since)."""
    if not offers:
        return None
    if instance.offer_key is None:
        return offers[0]
    for offer in offers:
        if offer.key == instance.offer_key:
            return offer
    return None


def price_instance(
    instance: Instance, offers: Sequence[Offer], slots_per_instance: int
) -> PricedInstance:
    offer = offer_of(instance, offers)
    if offer is None:
        kind = (instance.offer_key or "").split("@", 1)[0]
        return PricedInstance(instance, instance.offer_key, kind, slots_per_instance, 0.0)
    return PricedInstance(
        instance,
        instance.offer_key or offer.key,
        offer.instance_type,
        offer.slots or slots_per_instance,
        offer.price_per_hour,
    )


@dataclass(frozen=True)
class LifetimeChanges:
    opened: tuple[PricedInstance, ...] = ()  # first seen running: store with its launch time
    ended: tuple[str, ...] = ()  # instance ids no longer running: end now
    reopened: tuple[str, ...] = ()  # ended earlier, listed running again: clear the end


def lifetime_changes(
    listed: Sequence[PricedInstance], known: Mapping[str, bool]
) -> LifetimeChanges:
    """`known` maps each stored instance id of the pool to whether its life has ended."""
    running = {
        p.instance.id: p
        for p in listed
        if p.instance.state not in ENDED and p.instance.state not in NOT_YET
    }
    opened = tuple(p for i, p in sorted(running.items()) if i not in known)
    reopened = tuple(sorted(i for i in running if known.get(i) is True))
    ended = tuple(sorted(i for i, is_ended in known.items() if not is_ended and i not in running))
    return LifetimeChanges(opened, ended, reopened)
