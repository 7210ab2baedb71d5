"""Errors a searcher raises; the experiment turns them into its own state and log lines."""

from __future__ import annotations

from controlplane.domain.errors import InvalidArgument


class SearcherConfigError(InvalidArgument):
    """The searcher config or hyperparameter space cannot be searched (a 400 at creation)."""


class MetricMissing(ValueError):
    """A validation report lacks the searcher metric (or ASHA's time metric), or it is not a
    number. Determined moves the experiment to STOPPING_ERROR; the searcher state is unchanged.
    """
