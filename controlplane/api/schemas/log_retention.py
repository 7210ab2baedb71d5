"""Log retention on the wire (Determined's retain_logs requests, remaining days)."""

from __future__ import annotations

from pydantic import Field

from controlplane.api.schemas.common import Int32, Wire
from controlplane.domain import log_retention as rules

Days = Field(ge=rules.FOREVER, le=rules.MAX_DAYS)


class RetainExperimentLogs(Wire):
    experiment_id: Int32 | None = None
    num_days: int = Days


class RetainTrialLogs(Wire):
    trial_id: Int32 | None = None
    num_days: int = Days


class RemainingDays(Wire):
    remaining_days: int
