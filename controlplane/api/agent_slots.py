"""An agent's slots one by one (Determined's GetSlots, GetSlot, EnableSlot, DisableSlot)."""

from __future__ import annotations

from typing import Annotated

from litestar import get, post
from litestar.params import Parameter

from controlplane.api.agents import PathAgentId, agent_out
from controlplane.api.deps import Caller, Ctx, Db
from controlplane.api.schemas.agents import GetSlotResponse, GetSlotsResponse, Slot
from controlplane.domain.errors import NotFound
from controlplane.services import agents as agent_service

SlotId = Annotated[str, Parameter(max_length=64)]
_SLOTS = "/api/v1/agents/{agent_id:str}/slots"


async def _slots(db: Db, ctx: Ctx, agent_id: str) -> dict[str, Slot]:
    handle = agent_service.get_agent(ctx.scheduling, agent_id)
    placed = await agent_service.containers_by_agent(db)
    return agent_out(handle, placed.get(agent_id, [])).slots


def _one(slots: dict[str, Slot], agent_id: str, slot_id: str) -> Slot:
    if slot_id not in slots:
        raise NotFound(f"slot {slot_id} not found on agent {agent_id}")
    return slots[slot_id]


@get(_SLOTS)
async def get_slots(db: Db, principal: Caller, ctx: Ctx, agent_id: PathAgentId) -> GetSlotsResponse:
    slots = await _slots(db, ctx, agent_id)
    return GetSlotsResponse(slots=[slots[k] for k in sorted(slots, key=_order)])


@get(_SLOTS + "/{slot_id:str}")
async def get_slot(
    db: Db, principal: Caller, ctx: Ctx, agent_id: PathAgentId, slot_id: SlotId
) -> GetSlotResponse:
    return GetSlotResponse(slot=_one(await _slots(db, ctx, agent_id), agent_id, slot_id))


def _toggle(verb: str, enabled: bool):  # type: ignore[no-untyped-def]
    @post(_SLOTS + "/{slot_id:str}/" + verb, status_code=200, name=f"slot-{verb}")
    async def handler(
        db: Db, principal: Caller, ctx: Ctx, agent_id: PathAgentId, slot_id: SlotId
    ) -> GetSlotResponse:
        agent_service.set_slot_enabled(
            ctx.scheduling, principal.user, agent_id, slot_id, enabled=enabled
        )
        return GetSlotResponse(slot=_one(await _slots(db, ctx, agent_id), agent_id, slot_id))

    return handler


def _order(key: str) -> tuple[int, str]:
    return (int(key), key) if key.isdigit() else (1 << 30, key)


ROUTES = [get_slots, get_slot, _toggle("enable", True), _toggle("disable", False)]
