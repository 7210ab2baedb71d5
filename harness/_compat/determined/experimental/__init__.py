"""``determined.experimental``: the Python client of the master; ``client`` is the module user
code imports (``from determined.experimental import client``)."""

from harness.experimental.client import (
    Checkpoint,
    Determined,
    Experiment,
    OrderBy,
    Trial,
    TrialOrderBy,
    TrialSortBy,
)

from . import client

__all__ = [
    "Checkpoint",
    "Determined",
    "Experiment",
    "OrderBy",
    "Trial",
    "TrialOrderBy",
    "TrialSortBy",
    "client",
]
