"""What users ask of checkpoint GC: delete these, protect this one, change an experiment's
policy, show what GC would do. The deletions themselves run in controlplane.services.checkpoint_gc.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Checkpoint, Experiment
from controlplane.domain import checkpoint_refs, limits
from controlplane.domain.checkpoint_gc import GcPolicy
from controlplane.domain.errors import InvalidArgument, NotFound, PermissionDenied
from controlplane.services import checkpoint_gc
from controlplane.services.principals import Principal
from controlplane.services.trials import trial_for_write

# Determined's PatchExperiment.checkpointStorage keys, as the real client sends them.
POLICY_KEYS = {
    "saveExperimentBest": "save_experiment_best",
    "saveTrialBest": "save_trial_best",
    "saveTrialLatest": "save_trial_latest",
    "save_experiment_best": "save_experiment_best",
    "save_trial_best": "save_trial_best",
    "save_trial_latest": "save_trial_latest",
}


async def _writable(session: AsyncSession, principal: Principal, uuid: str) -> Checkpoint:
    checkpoint_refs.check_uuid(uuid)
    ckpt = await session.get(Checkpoint, uuid)
    if ckpt is None:
        raise NotFound(f"checkpoint {uuid} not found")
    if ckpt.trial_id is not None:
        await trial_for_write(session, principal, ckpt.trial_id)
    elif not principal.user.admin or principal.allocation is not None:
        raise PermissionDenied(f"only an admin may change checkpoint {uuid}")
    return ckpt


def _check_globs(globs: list[str]) -> list[str]:
    for glob in globs:
        if not glob or len(glob) > limits.PATH_CHARS or "\x00" in glob:
            raise InvalidArgument(
                f"checkpoint glob {glob[:80]!r} must be 1 to {limits.PATH_CHARS} characters "
                "without NUL"
            )
    return list(dict.fromkeys(globs))


async def request_user_deletion(
    session: AsyncSession,
    principal: Principal,
    uuids: list[str],
    now: datetime,
    registered: checkpoint_gc.RegisteredProvider = checkpoint_gc.registered_in_models,
    *,
    globs: list[str] | None = None,
) -> int:
    """`det checkpoint delete` (whole checkpoints) and `det checkpoint rm` (the files matching
    `globs`; none: re-read the resources): all or nothing; a protected checkpoint refuses."""
    if not uuids:
        raise InvalidArgument("name at least one checkpoint uuid")
    if globs is not None:
        globs = _check_globs(globs)
    wanted = list(dict.fromkeys(uuids))
    for uuid in wanted:
        await _writable(session, principal, uuid)
    protected = await checkpoint_gc.protected_reasons(session, wanted, registered)
    if protected:
        uuid, why = sorted(protected.items())[0]
        reasons = ", ".join(sorted(r.value for r in why))
        raise InvalidArgument(
            f"checkpoint {uuid} cannot be deleted: it is protected ({reasons})"
            + (f"; {len(protected) - 1} more are too" if len(protected) > 1 else "")
        )
    return await checkpoint_gc.request_deletion(session, wanted, now, globs)


async def set_protection(
    session: AsyncSession, principal: Principal, uuid: str, protected: bool
) -> Checkpoint:
    ckpt = await _writable(session, principal, uuid)
    if protected and ckpt.state == "DELETED":
        raise InvalidArgument(f"checkpoint {uuid} is already deleted")
    ckpt.protected = protected
    if protected and ckpt.delete_requested_at is not None:
        # The owner's "keep it" wins over a deletion that has not happened yet.
        ckpt.delete_requested_at = None
        ckpt.delete_globs = None
        ckpt.delete_retry_at = None
        ckpt.delete_error = None
        ckpt.delete_attempts = 0
    return ckpt


def _count(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**31 - 1:
        raise InvalidArgument(
            f"checkpointStorage.{key} must be an integer from 0 to 2147483647, not {value!r}"
        )
    return value


async def patch_gc_policy(
    session: AsyncSession, exp: Experiment, patch: Mapping[str, Any], now: datetime
) -> None:
    """Determined's PATCH of checkpointStorage save_*: store them and collect again (at once
    for an ended experiment; a running one is collected when it ends)."""
    unknown = sorted(set(patch) - set(POLICY_KEYS))
    if unknown:
        raise InvalidArgument(
            f"checkpointStorage: only saveExperimentBest, saveTrialBest and saveTrialLatest "
            f"can be changed, not {', '.join(unknown)[:200]}"
        )
    changes = {POLICY_KEYS[k]: _count(k, v) for k, v in patch.items() if v is not None}
    if not changes:
        return
    config = dict(exp.config)
    storage = config.get("checkpoint_storage")
    storage = dict(storage) if isinstance(storage, dict) else {}
    storage.update(changes)
    config["checkpoint_storage"] = storage
    GcPolicy.from_config(config)  # cannot fail: the counts were checked above
    exp.config = config
    exp.gc_requested_at = now


async def request_experiment_gc(session: AsyncSession, exp: Experiment, now: datetime) -> None:
    exp.gc_requested_at = now


async def experiment_by_id(session: AsyncSession, experiment_id: int) -> Experiment:
    exp = await session.scalar(select(Experiment).where(Experiment.id == experiment_id))
    if exp is None:
        raise NotFound(f"experiment {experiment_id} not found")
    return exp
