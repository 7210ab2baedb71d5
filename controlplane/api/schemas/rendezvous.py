"""Wire shape of the rendezvous answer (Determined's v1RendezvousInfo)."""

from __future__ import annotations

from controlplane.api.schemas.common import Wire


class RendezvousInfo(Wire):
    addresses: list[str]
    rank: int
    slots: list[int]


class AllocationRendezvousInfoResponse(Wire):
    rendezvous_info: RendezvousInfo
