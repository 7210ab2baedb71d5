"""A checkpoint's user metadata replaced by its experiment's owner or an admin (Determined's
PostCheckpointMetadata, what the SDK's `Checkpoint.add_metadata`/`remove_metadata` send: the
whole new metadata each time)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Checkpoint
from controlplane.domain import checkpoint_refs, limits
from controlplane.domain.errors import InvalidArgument, NotFound, PermissionDenied
from controlplane.services.principals import Principal
from controlplane.services.trials import trial_for_write


def _check(metadata: dict[str, Any]) -> None:
    limits.check_json_size("checkpoint metadata", metadata, limits.CHECKPOINT_METADATA_BYTES)
    if "\\u0000" in json.dumps(metadata):  # PostgreSQL's JSON cannot hold NUL
        raise InvalidArgument("checkpoint metadata may not contain NUL characters")


async def replace_metadata(
    session: AsyncSession, principal: Principal, uuid: str, metadata: dict[str, Any]
) -> Checkpoint:
    """The checkpoint with `metadata` as its metadata; refused where the caller may not change
    the checkpoint's trial (a checkpoint of no trial: admins only)."""
    checkpoint_refs.check_uuid(uuid)
    _check(metadata)
    ckpt = await session.get(Checkpoint, uuid)
    if ckpt is None:
        raise NotFound(f"checkpoint {uuid} not found")
    if ckpt.trial_id is not None:
        await trial_for_write(session, principal, ckpt.trial_id)
    elif not principal.user.admin or principal.allocation is not None:
        raise PermissionDenied(f"only an admin may change checkpoint {uuid}")
    ckpt.metadata_ = dict(metadata)
    return ckpt
