"""Historical usage per day or month, as Determined's `/api/v1/resources/allocation/aggregated`
serves it (slot-seconds per period, by user, experiment label and pool), with our cost beside it.

Also the argument checks of the usage endpoints, Determined's formats: dates `YYYY-MM-DD` (daily)
or `YYYY-MM` (monthly), both ends included; timestamps `YYYY-MM-DDTHH:MM:SSZ` (any ISO 8601 time
with a zone is taken too; one without a zone is read as UTC). Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from controlplane.domain.cost import (
    AllocationUse,
    InstanceLife,
    Share,
    allocation_share,
    by_label,
    by_pool,
    by_user,
    by_workspace,
    lives_by_agent,
    totals_by,
)

DAILY = "RESOURCE_ALLOCATION_AGGREGATION_PERIOD_DAILY"
MONTHLY = "RESOURCE_ALLOCATION_AGGREGATION_PERIOD_MONTHLY"
# The longest range one request may span: ten years of days, twenty of months. Each period is
# one entry of the answer, so a range is bounded like any page.
MAX_DAYS = 3660
MAX_MONTHS = 240
MAX_WINDOW = timedelta(days=MAX_DAYS)

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MONTH = re.compile(r"^\d{4}-\d{2}$")


class UsageArgumentError(ValueError):
    """A date, timestamp or period the usage endpoints cannot use (HTTP 400)."""


@dataclass(frozen=True)
class Period:
    label: str  # what Determined puts in periodStart: YYYY-MM-DD or YYYY-MM
    start: datetime
    end: datetime


@dataclass(frozen=True)
class PeriodTotals:
    period: Period
    total: Share
    by_username: dict[str, Share] = field(default_factory=dict[str, Share])
    by_experiment_label: dict[str, Share] = field(default_factory=dict[str, Share])
    by_resource_pool: dict[str, Share] = field(default_factory=dict[str, Share])
    by_workspace: dict[str, Share] = field(default_factory=dict[str, Share])


def _date(text: str, monthly: bool, what: str) -> date:
    shown, pattern, fmt = (
        ("YYYY-MM", _MONTH, "%Y-%m") if monthly else ("YYYY-MM-DD", _DAY, "%Y-%m-%d")
    )
    if not pattern.match(text):
        raise UsageArgumentError(f"invalid {what} {text[:40]!r}: expected {shown}")
    try:
        return datetime.strptime(text, fmt).date()
    except ValueError:
        raise UsageArgumentError(f"invalid {what} {text!r}: no such date") from None


def _first_of_next_month(d: date) -> date:
    return date(d.year + (d.month == 12), d.month % 12 + 1, 1)


def periods(start_date: str, end_date: str, period: str) -> list[Period]:
    """The periods from `start_date` to `end_date`, both included, in Determined's formats."""
    if period == DAILY:
        first = _date(start_date, False, "start date")
        last = _date(end_date, False, "end date")
        step_count = (last - first).days + 1
        limit = MAX_DAYS
    elif period == MONTHLY:
        first = _date(start_date, True, "start date")
        last = _date(end_date, True, "end date")
        step_count = (last.year - first.year) * 12 + last.month - first.month + 1
        limit = MAX_MONTHS
    else:
        raise UsageArgumentError(f"no aggregation period specified (got {period[:80]!r})")
    if step_count <= 0:
        raise UsageArgumentError("start date cannot be after end date")
    if step_count > limit:
        raise UsageArgumentError(f"at most {limit} periods per request (asked for {step_count})")
    out: list[Period] = []
    day = first
    try:
        for _ in range(step_count):
            following = day + timedelta(days=1) if period == DAILY else _first_of_next_month(day)
            label = day.isoformat() if period == DAILY else day.isoformat()[:7]
            out.append(Period(label, _midnight(day), _midnight(following)))
            day = following
    except (OverflowError, ValueError):  # past year 9999
        raise UsageArgumentError("end date out of range") from None
    return out


def _midnight(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def parse_timestamp(text: str, what: str) -> datetime:
    """Determined's `YYYY-MM-DDTHH:MM:SSZ`, or any ISO 8601 time; UTC when it names no zone."""
    if not text or len(text) > 64 or "\x00" in text:
        raise UsageArgumentError(f"invalid {what}: expected YYYY-MM-DDTHH:MM:SSZ")
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageArgumentError(
            f"invalid {what} {text!r}: expected YYYY-MM-DDTHH:MM:SSZ"
        ) from None
    try:
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except OverflowError:  # year 1 or 9999 moved across midnight by its offset
        raise UsageArgumentError(f"invalid {what} {text!r}: out of range") from None


def window(after: str, before: str) -> tuple[datetime, datetime]:
    """The window [timestamp_after, timestamp_before] of the raw and CSV endpoints."""
    start = parse_timestamp(after, "start time")
    end = parse_timestamp(before, "end time")
    if start > end:
        raise UsageArgumentError("start time cannot be after end time")
    if end - start > MAX_WINDOW:
        raise UsageArgumentError(f"a window spans at most {MAX_DAYS} days")
    return start, end


def aggregate(
    uses: list[AllocationUse],
    lives: list[InstanceLife],
    now: datetime,
    spans: list[Period],
) -> list[PeriodTotals]:
    """Slot-seconds and cost per period: the total, and by user, label, pool and workspace.
    `spans` are consecutive periods in order, as `periods` gives them."""
    by_agent = lives_by_agent(lives)
    # A sweep over the periods (in order) and the allocations by start: each period looks only
    # at the allocations alive in it, not at every allocation of the range.
    ordered = sorted(uses, key=lambda u: u.start)
    next_use = 0
    alive: list[AllocationUse] = []
    out: list[PeriodTotals] = []
    for span in spans:
        bounds = (span.start, span.end)
        while next_use < len(ordered) and ordered[next_use].start < span.end:
            alive.append(ordered[next_use])
            next_use += 1
        alive = [u for u in alive if (u.end or now) > span.start]
        pairs = []
        for use in alive:
            share = allocation_share(use, by_agent, now, bounds)
            if share.slot_seconds > 0:
                pairs.append((use, share))
        total = Share()
        for _, share in pairs:
            total = total + share
        out.append(
            PeriodTotals(
                span,
                total,
                by_username=totals_by(pairs, by_user),
                by_experiment_label=totals_by(pairs, by_label),
                by_resource_pool=totals_by(pairs, by_pool),
                by_workspace=totals_by(pairs, by_workspace),
            )
        )
    return out
