"""Experiment labels as Determined 0.38 treats them: a label is added once and kept in the
order added; the cluster's labels are listed most used first (GetExperimentLabels)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence


def add_label(labels: Sequence[str], label: str) -> list[str]:
    """`labels` with `label` at the end, unless it is there already."""
    return list(labels) if label in labels else [*labels, label]


def remove_label(labels: Sequence[str], label: str) -> list[str]:
    """`labels` without `label` (unchanged if it is not there)."""
    return [x for x in labels if x != label]


def popular_labels(per_experiment: Iterable[Sequence[str]]) -> list[str]:
    """Every distinct label, by how many experiments carry it (most first), then by name so
    that equal counts list the same way every time."""
    counts = Counter(label for labels in per_experiment for label in set(labels))
    return sorted(counts, key=lambda label: (-counts[label], label))
