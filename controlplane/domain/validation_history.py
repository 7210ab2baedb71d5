"""An experiment's validation history (Determined's GetExperimentValidationHistory): the
validations that each improved on the best searcher metric seen before them, in time order.

Pure: the experiment's validations in, the improving ones out. A validation without a finite
searcher metric (a group the searcher does not use, a NaN) never enters the history.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Validation:
    trial_id: int
    end_time: datetime
    value: float | None  # the searcher metric this validation reported, if any


def improving(validations: Iterable[Validation], *, smaller_is_better: bool) -> list[Validation]:
    """Each validation that beat every earlier one (ties do not improve), ordered by end time
    and then trial id, so the answer does not depend on the order the rows came in."""
    ordered = sorted(validations, key=lambda v: (v.end_time, v.trial_id))
    best: float | None = None
    kept: list[Validation] = []
    for v in ordered:
        if v.value is None or not math.isfinite(v.value):
            continue
        if best is None or (v.value < best if smaller_is_better else v.value > best):
            best = v.value
            kept.append(v)
    return kept
