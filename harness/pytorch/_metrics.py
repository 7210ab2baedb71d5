"""What train_batch and evaluate_batch return, made into reportable metrics and averaged."""

from __future__ import annotations

from typing import Any

import torch


def mean_metrics(rows: list[dict[str, Any]], weights: list[float] | None = None) -> dict[str, Any]:
    """Per-key (weighted) means of numeric metrics; other values keep their last value."""
    sums: dict[str, float] = {}
    totals: dict[str, float] = {}
    other: dict[str, Any] = {}
    for i, row in enumerate(rows):
        w = 1.0 if weights is None else weights[i]
        for key, value in row.items():
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                value = value.item()
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                sums[key] = sums.get(key, 0.0) + w * float(value)
                totals[key] = totals.get(key, 0.0) + w
            else:
                other[key] = value
    out = dict(other)
    out.update({k: sums[k] / totals[k] for k in sums if totals[k] > 0})
    return out


def as_metrics(value: Any, where: str) -> dict[str, Any]:
    if isinstance(value, torch.Tensor):
        return {"loss": value.detach()}
    if isinstance(value, dict):
        return {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in value.items()}
    raise TypeError(f"{where} must return a dict of metrics or a loss tensor, not {value!r}")
