"""CompareTrials' `timeSeriesFilter` and `metricIds` (Determined's GET /api/v1/trials/time-series
query parameters), parsed into a plan: the batch window to read and reduce, and a predicate for
what a window cannot express (`incl`/`notIn` steps, epoch and time ranges).

A batch range narrows the window before the reduction, so a filtered chart still reaches full
resolution; epoch and time ranges are applied to the points the reduction kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from controlplane.domain.errors import InvalidArgument
from controlplane.domain.limits import METRIC_NAME_CHARS

# The x axes Determined's charts offer: `batches` (steps), `epoch` and `time`.
NAMES = ("batches", "epoch", "time")
BOUNDS = ("gt", "gte", "lt", "lte")
MAX_LISTED = 1000


@dataclass(frozen=True)
class SeriesFilter:
    name: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    include: frozenset[int] | None = None
    exclude: frozenset[int] = field(default_factory=frozenset)


def _number(raw: str, key: str, kind: str) -> float:
    try:
        value = int(raw) if kind == "integerRange" else float(raw)
    except ValueError:
        raise InvalidArgument(f"timeSeriesFilter.{key} must be a number (got {raw!r})") from None
    if not math.isfinite(value):
        raise InvalidArgument(f"timeSeriesFilter.{key} must be finite (got {raw!r})")
    return float(value)


def _stamp(raw: str, key: str) -> float:
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InvalidArgument(f"timeSeriesFilter.{key} must be an RFC 3339 time") from None


def parse(params: Mapping[str, str], lists: Mapping[str, Sequence[str]]) -> SeriesFilter | None:
    """`params` holds the single-valued `timeSeriesFilter.*` query parameters, `lists` the
    repeated ones (`integerRange.incl`, `integerRange.notIn`)."""
    name = params.get("timeSeriesFilter.name")
    given = [k for k in params if k != "timeSeriesFilter.name"] + [k for k in lists if lists[k]]
    if name is None:
        if given:
            raise InvalidArgument("timeSeriesFilter.name is required with a range")
        return None
    if name not in NAMES:
        raise InvalidArgument(f"timeSeriesFilter.name must be one of {list(NAMES)} (got {name!r})")
    kinds = {k.split(".")[1] for k in given}
    if len(kinds) > 1:
        raise InvalidArgument(f"give one range kind in timeSeriesFilter (got {sorted(kinds)})")
    kind = kinds.pop() if kinds else None
    wanted = {"batches": ("integerRange", "doubleRange"), "epoch": ("doubleRange",)}
    if kind and kind not in wanted.get(name, ("timeRange",)):
        raise InvalidArgument(f"timeSeriesFilter.{kind} does not apply to {name!r}")
    bounds: dict[str, float] = {}
    for bound in BOUNDS:
        key = f"{kind}.{bound}"
        raw = params.get(f"timeSeriesFilter.{key}")
        if raw is not None:
            bounds[bound] = _stamp(raw, key) if kind == "timeRange" else _number(raw, key, kind)
    listed = {k: lists.get(f"timeSeriesFilter.integerRange.{k}") or () for k in ("incl", "notIn")}
    if sum(len(v) for v in listed.values()) > MAX_LISTED:
        raise InvalidArgument(f"at most {MAX_LISTED} steps may be listed in timeSeriesFilter")
    steps = {k: frozenset(int(_number(s, f"integerRange.{k}", kind or "")) for s in v)
             for k, v in listed.items()}  # fmt: skip
    lo_key = "gt" if "gt" in bounds else "gte"
    hi_key = "lt" if "lt" in bounds else "lte"
    return SeriesFilter(
        name=name,
        lo=bounds.get(lo_key),
        hi=bounds.get(hi_key),
        lo_open=lo_key == "gt",
        hi_open=hi_key == "lt",
        include=steps["incl"] if listed["incl"] else None,
        exclude=steps["notIn"],
    )


def batch_window(
    f: SeriesFilter | None, lo: int | None, hi: int | None
) -> tuple[int | None, int | None]:
    """[lo, hi] of `startBatches`/`endBatches` narrowed by a batch range (whole steps)."""
    if f is None or f.name != "batches":
        return lo, hi
    if f.lo is not None:
        first = math.floor(f.lo) + 1 if f.lo_open else math.ceil(f.lo)
        lo = first if lo is None else max(lo, first)
    if f.hi is not None:
        last = math.ceil(f.hi) - 1 if f.hi_open else math.floor(f.hi)
        hi = last if hi is None else min(hi, last)
    return lo, hi


def _inside(f: SeriesFilter, v: float | None) -> bool:
    if v is None:
        return f.lo is None and f.hi is None
    if f.lo is not None and (v <= f.lo if f.lo_open else v < f.lo):
        return False
    return not (f.hi is not None and (v >= f.hi if f.hi_open else v > f.hi))


def keeps(f: SeriesFilter | None) -> Callable[[int, float | None, datetime | None], bool]:
    """Whether a point (steps, epoch, time) passes what the batch window did not already do."""
    if f is None:
        return lambda steps, epoch, time: True

    def keep(steps: int, epoch: float | None, time: datetime | None) -> bool:
        if f.include is not None and steps not in f.include:
            return False
        if steps in f.exclude:
            return False
        if f.name == "epoch":
            return _inside(f, epoch)
        if f.name == "time":
            return _inside(f, time.timestamp() if time else None)
        return True

    return keep


def metric_ids(ids: Sequence[str], check_group: Callable[[str], None]) -> dict[str, list[str]]:
    """`group.metric_name` ids as {group: [names]}, in the order given; the name may hold dots."""
    out: dict[str, list[str]] = {}
    for raw in ids:
        group, dot, name = raw.partition(".")
        if not dot or not group or not name:
            raise InvalidArgument(f"metricIds must be group.metric_name (got {raw!r})")
        check_group(group)
        if len(name) > METRIC_NAME_CHARS:
            raise InvalidArgument(f"a metric name is at most {METRIC_NAME_CHARS} characters")
        names = out.setdefault(group, [])
        if name not in names:
            names.append(name)
    return out
