"""Size limits on the free text and free-form JSON the master stores.

Every field a user or a task writes and the master keeps has a bound here, so that one request
cannot make every later read large (a 10 MB description made each `GET /api/v1/experiments`
carry about 30 MB). Over a limit, a request is refused with a 400 that names the field and the
limit; a log line is cut instead, with a marker. docs/operations.md lists them all.
"""

from __future__ import annotations

import json
from typing import Any

from controlplane.domain.errors import InvalidArgument

KIB = 1024
MIB = 1024 * KIB

# Characters (Unicode code points).
NAME_CHARS = 512
"""Experiment names (as Determined's column, and ours)."""
SHORT_NAME_CHARS = 255
"""Usernames, display names, template names, labels, project and workspace names, ids."""
DESCRIPTION_CHARS = 8 * KIB
"""Experiment and command descriptions."""
NOTES_CHARS = 64 * KIB
"""Experiment notes (Markdown)."""
LABELS = 100
"""Labels per experiment."""
METRIC_NAME_CHARS = 1 * KIB
"""Metric names in a report."""
PATH_CHARS = 4 * KIB
"""A file path inside a checkpoint (Linux's PATH_MAX)."""
LOG_LINE_CHARS = 64 * KIB
"""A log line; longer ones are stored cut, ending in `log_truncation_marker`."""

# Bytes of compact UTF-8 JSON.
CONFIG_BYTES = 1 * MIB
"""An experiment or command config given as a JSON object, and a template's config (the YAML
text of an experiment config has the same bound)."""

# Searches.
MAX_GRID_TRIALS = 100_000
"""Points of a grid search; a bigger grid is refused when the experiment is created."""
MAX_CONCURRENT_TRIALS = 10_000
"""Trials a search may start at once (each a row and a task request made in one transaction):
`max_trials` above it needs a `max_concurrent_trials` of at most this."""

CHECKPOINT_METADATA_BYTES = 1 * MIB
"""A checkpoint's metadata."""
CHECKPOINT_RESOURCES = 100_000
# Checkpoints named in one `DELETE /api/v1/checkpoints` (`det checkpoint delete a,b,c`).
CHECKPOINTS_PER_DELETE = 1000
"""Files listed in one checkpoint's resources."""


def json_size(value: Any) -> int:
    """Bytes of `value` as compact UTF-8 JSON (NaN and infinities written as JSON cannot)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return len(text.encode("utf-8", "surrogatepass"))


def check_json_size(field: str, value: Any, limit: int) -> None:
    size = json_size(value)
    if size > limit:
        raise InvalidArgument(f"{field} is {size} bytes as JSON; at most {limit} are allowed")


def log_truncation_marker(cut: int) -> str:
    return f" [... {cut} characters cut: log lines are kept to {LOG_LINE_CHARS}]"


def truncate_log_line(text: str) -> str:
    """`text`, or its start and a marker saying how much was cut, LOG_LINE_CHARS at most.

    A line's ending newline is not counted and is kept: the harness ships long output in
    pieces of exactly LOG_LINE_CHARS bytes, and the last piece of a line ends in its newline.
    """
    body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
    if len(body) <= LOG_LINE_CHARS:
        return text
    longest = log_truncation_marker(len(body))  # no marker needs more digits than this one
    keep = LOG_LINE_CHARS - len(longest)
    return body[:keep] + log_truncation_marker(len(body) - keep) + end


# The model registry, workspaces and projects.
REGISTRY_METADATA_BYTES = 256 * KIB
"""A registered model's or model version's metadata."""
PROJECT_KEY_CHARS = 5
"""A project key (Determined's: up to 5 letters or digits)."""
BULK_EXPERIMENTS = 10_000
"""Experiments one bulk action (archive, pause, move...) may name or match."""
SEARCH_PAGE = 1_000
"""Experiments one page of the experiment search returns."""
INTERACTIVE_DATA_CHARS = 512 * KIB
"""The `data` field a notebook, TensorBoard or shell launch may carry (base64; not read)."""
