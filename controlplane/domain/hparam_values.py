"""A trial's sampled hyperparameters as (dotted name, number, text) rows: what the experiment
list's `hp.<name>` filter searches through an index instead of the trials' JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

NAME_CHARS = 255


@dataclass(frozen=True)
class HparamValue:
    name: str  # nested maps joined with dots, as the filter's `hp.optimizer.lr`
    number: float | None  # a JSON number (never a bool); else None
    text: str  # a string as is, anything else as its JSON


def flatten_hparams(hparams: dict[str, Any], prefix: str = "") -> list[HparamValue]:
    """One row per leaf; a nested map is walked, not stored. Names longer than a filter may
    name are left out (no filter could reach them)."""
    rows: list[HparamValue] = []
    for key, value in sorted(hparams.items()):
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            rows.extend(flatten_hparams(value, f"{name}."))
            continue
        if len(name) > NAME_CHARS:
            continue
        number = (
            float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        rows.append(HparamValue(name, number, text))
    return rows
