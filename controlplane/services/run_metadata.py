"""Run metadata (the Core API's set_metadata/get_metadata) and custom alerts (Context.alert).

A run is a trial here: Determined 0.38 keys both endpoints on the run id, which is the trial id.
"""

from __future__ import annotations

import json
import logging
import math
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.domain.errors import InvalidArgument, PermissionDenied
from controlplane.services import logs, trials, webhook_outbox
from controlplane.services.principals import Principal

log = logging.getLogger(__name__)

# The stored metadata, serialized as compact JSON, may not exceed this. Checked after the merge,
# so many small posts cannot grow it past the bound either.
MAX_METADATA_BYTES = 1 << 20
# An alert's title and description together, so one alert is one readable log line.
MAX_ALERT_CHARS = 64 * 1024
ALERT_LEVELS = (
    "LOG_LEVEL_UNSPECIFIED",
    "LOG_LEVEL_TRACE",
    "LOG_LEVEL_DEBUG",
    "LOG_LEVEL_INFO",
    "LOG_LEVEL_WARNING",
    "LOG_LEVEL_ERROR",
    "LOG_LEVEL_CRITICAL",
)
_PY_LEVELS = {
    "LOG_LEVEL_TRACE": logging.DEBUG,
    "LOG_LEVEL_DEBUG": logging.DEBUG,
    "LOG_LEVEL_WARNING": logging.WARNING,
    "LOG_LEVEL_ERROR": logging.ERROR,
    "LOG_LEVEL_CRITICAL": logging.CRITICAL,
}


def merge(stored: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """New keys win; where both sides hold an object, the objects merge key by key."""
    out = dict(stored)
    for key, value in new.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = merge(old, value)
        else:
            out[key] = value
    return out


def serialized_size(metadata: dict[str, Any]) -> int:
    """Bytes of compact UTF-8 JSON; refuses values JSON cannot carry (NaN, Infinity)."""
    try:
        text = json.dumps(metadata, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        raise InvalidArgument(f"metadata is not plain JSON: {exc}") from exc
    return len(text.encode("utf-8", "surrogatepass"))


def check_metadata(metadata: Any) -> dict[str, Any]:
    if not isinstance(metadata, dict):
        kind = "null" if metadata is None else type(metadata).__name__
        raise InvalidArgument(f"metadata must be a JSON object, not {kind}")
    _check_text(metadata, "metadata")
    return metadata


def _check_text(value: Any, path: str) -> None:
    """PostgreSQL's JSONB can hold neither NUL nor lone surrogates; floats must be finite."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_text(key, f"{path} key")
            _check_text(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_text(item, f"{path}[{i}]")
    elif isinstance(value, str):
        if "\x00" in value:
            raise InvalidArgument(f"{path} must not contain NUL (\\u0000) characters")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArgument(f"{path} is not valid Unicode (a lone surrogate)") from exc
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidArgument(f"{path} must be a finite number")


async def set_metadata(
    session: AsyncSession, principal: Principal, trial_id: int, metadata: Any
) -> dict[str, Any]:
    new = check_metadata(metadata)
    trial = await trials.trial_for_write(session, principal, trial_id)
    merged = merge(trial.run_metadata or {}, new)
    size = serialized_size(merged)
    if size > MAX_METADATA_BYTES:
        raise InvalidArgument(
            f"run metadata would be {size} bytes of JSON; at most {MAX_METADATA_BYTES} are stored"
        )
    trial.run_metadata = merged
    return merged


async def get_metadata(
    session: AsyncSession, principal: Principal, trial_id: int
) -> dict[str, Any]:
    trial = await trials.get_trial(session, trial_id)
    if principal.allocation is not None and principal.allocation.task_id != trial.task_id:
        raise PermissionDenied(f"this task's token is not valid for trial {trial_id}")
    return trial.run_metadata or {}


async def alert(
    session: AsyncSession,
    principal: Principal,
    *,
    experiment_id: int,
    trial_id: int | None,
    title: str,
    description: str,
    level: str | None,
    now: datetime,
) -> None:
    """The alert fires the CUSTOM triggers of the experiment's webhooks (through the outbox:
    services/webhook_outbox) and becomes a line of the trial's task log, and of the master's."""
    if trial_id is None:
        raise InvalidArgument("trialId is required: alerts are recorded in a trial's log")
    level = level or "LOG_LEVEL_INFO"
    if level not in ALERT_LEVELS:
        raise InvalidArgument(f"unknown alert level '{level}'")
    if level == "LOG_LEVEL_UNSPECIFIED":
        level = "LOG_LEVEL_INFO"
    if len(title) + len(description) > MAX_ALERT_CHARS:
        raise InvalidArgument(
            f"an alert's title and description are limited to {MAX_ALERT_CHARS} characters"
        )
    trial = await trials.trial_for_write(session, principal, trial_id)
    if trial.experiment_id != experiment_id:
        raise InvalidArgument(
            f"trial {trial_id} belongs to experiment {trial.experiment_id}, not {experiment_id}"
        )
    text = f"[alert] {title}: {description}" if description else f"[alert] {title}"
    allocation_id = principal.allocation.allocation_id if principal.allocation else None
    line = logs.LogLine(
        task_id=trial.task_id,
        log=text,
        allocation_id=allocation_id,
        level=level,
        source="alert",
        timestamp=now,
    )
    await logs.append(session, principal, [line], now)
    alert_data = {"title": title, "description": description, "level": level}
    webhook_outbox.record_alert(session, experiment_id, trial_id, alert_data, now)
    log.log(
        _PY_LEVELS.get(level, logging.INFO),
        "alert from trial %d of experiment %d: %s",
        trial_id,
        experiment_id,
        text.replace("\x00", "\ufffd"),
    )
