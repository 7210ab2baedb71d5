"""Searchers: pure decision modules (events in, operations out), reference §4.

Standard library only (optuna inside `tpe`); no database, no I/O, no clock; randomness only from
the experiment seed. See docs/searchers.md.
"""

from .base import Searcher
from .errors import MetricMissing, SearcherConfigError
from .factory import make_searcher, restore_searcher
from .ops import (
    Close,
    Create,
    Event,
    Op,
    Promote,
    Shutdown,
    Stop,
    TrialClosed,
    TrialCreated,
    TrialExitedEarly,
    TrialProgress,
    ValidationReported,
)

__all__ = [
    "Close",
    "Create",
    "Event",
    "MetricMissing",
    "Op",
    "Promote",
    "Searcher",
    "SearcherConfigError",
    "Shutdown",
    "Stop",
    "TrialClosed",
    "TrialCreated",
    "TrialExitedEarly",
    "TrialProgress",
    "ValidationReported",
    "make_searcher",
    "restore_searcher",
]
