"""The client's enums (Determined's names and wire values) and the wire helpers its objects
share: paging, streamed lists, ordering with unknown values last."""

from __future__ import annotations

import enum
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

from harness._session import APIError, Session

PAGE = 1000


class ExperimentState(enum.Enum):
    ACTIVE = "STATE_ACTIVE"
    CANCELED = "STATE_CANCELED"
    COMPLETED = "STATE_COMPLETED"
    DELETED = "STATE_DELETED"
    DELETE_FAILED = "STATE_DELETE_FAILED"
    DELETING = "STATE_DELETING"
    ERROR = "STATE_ERROR"
    PAUSED = "STATE_PAUSED"
    PULLING = "STATE_PULLING"
    QUEUED = "STATE_QUEUED"
    RUNNING = "STATE_RUNNING"
    STARTING = "STATE_STARTING"
    STOPPING_CANCELED = "STATE_STOPPING_CANCELED"
    STOPPING_COMPLETED = "STATE_STOPPING_COMPLETED"
    STOPPING_ERROR = "STATE_STOPPING_ERROR"
    STOPPING_KILLED = "STATE_STOPPING_KILLED"


# What the master shows an ACTIVE experiment or trial as (Determined's enriched states).
ACTIVE_SHOWN_AS = frozenset(
    {
        ExperimentState.QUEUED,
        ExperimentState.PULLING,
        ExperimentState.STARTING,
        ExperimentState.RUNNING,
    }
)

TERMINAL_STATES = frozenset(
    {
        ExperimentState.COMPLETED,
        ExperimentState.CANCELED,
        ExperimentState.DELETED,
        ExperimentState.ERROR,
    }
)


class TrialState(enum.Enum):
    ACTIVE = "STATE_ACTIVE"
    CANCELED = "STATE_CANCELED"
    COMPLETED = "STATE_COMPLETED"
    ERROR = "STATE_ERROR"
    PAUSED = "STATE_PAUSED"
    PULLING = "STATE_PULLING"
    QUEUED = "STATE_QUEUED"
    RUNNING = "STATE_RUNNING"
    STARTING = "STATE_STARTING"
    STOPPING_CANCELED = "STATE_STOPPING_CANCELED"
    STOPPING_COMPLETED = "STATE_STOPPING_COMPLETED"
    STOPPING_ERROR = "STATE_STOPPING_ERROR"
    STOPPING_KILLED = "STATE_STOPPING_KILLED"


class CheckpointState(enum.Enum):
    ACTIVE = "STATE_ACTIVE"
    COMPLETED = "STATE_COMPLETED"
    DELETED = "STATE_DELETED"
    ERROR = "STATE_ERROR"
    PARTIALLY_DELETED = "STATE_PARTIALLY_DELETED"


class OrderBy(enum.Enum):
    ASCENDING = "ORDER_BY_ASC"
    DESCENDING = "ORDER_BY_DESC"


# Determined's deprecated per-object names of OrderBy.
TrialOrderBy = OrderBy
ExperimentOrderBy = OrderBy


class CheckpointOrderBy(enum.Enum):
    ASC = "ORDER_BY_ASC"
    DESC = "ORDER_BY_DESC"


class CheckpointSortBy(enum.Enum):
    BATCH_NUMBER = "SORT_BY_BATCH_NUMBER"
    END_TIME = "SORT_BY_END_TIME"
    SEARCHER_METRIC = "SORT_BY_SEARCHER_METRIC"
    STATE = "SORT_BY_STATE"
    TRIAL_ID = "SORT_BY_TRIAL_ID"
    UUID = "SORT_BY_UUID"


class TrialSortBy(enum.Enum):
    BATCHES_PROCESSED = "SORT_BY_BATCHES_PROCESSED"
    BEST_VALIDATION_METRIC = "SORT_BY_BEST_VALIDATION_METRIC"
    CHECKPOINT_SIZE = "SORT_BY_CHECKPOINT_SIZE"
    DURATION = "SORT_BY_DURATION"
    END_TIME = "SORT_BY_END_TIME"
    ID = "SORT_BY_ID"
    LATEST_VALIDATION_METRIC = "SORT_BY_LATEST_VALIDATION_METRIC"
    LOG_RETENTION_DAYS = "SORT_BY_LOG_RETENTION_DAYS"
    RESTARTS = "SORT_BY_RESTARTS"
    START_TIME = "SORT_BY_START_TIME"
    STATE = "SORT_BY_STATE"


class ExperimentSortBy(enum.Enum):
    CHECKPOINT_COUNT = "SORT_BY_CHECKPOINT_COUNT"
    CHECKPOINT_SIZE = "SORT_BY_CHECKPOINT_SIZE"
    DESCRIPTION = "SORT_BY_DESCRIPTION"
    END_TIME = "SORT_BY_END_TIME"
    FORKED_FROM = "SORT_BY_FORKED_FROM"
    ID = "SORT_BY_ID"
    NAME = "SORT_BY_NAME"
    NUM_TRIALS = "SORT_BY_NUM_TRIALS"
    PROGRESS = "SORT_BY_PROGRESS"
    PROJECT_ID = "SORT_BY_PROJECT_ID"
    RESOURCE_POOL = "SORT_BY_RESOURCE_POOL"
    SEARCHER_METRIC_VAL = "SORT_BY_SEARCHER_METRIC_VAL"
    START_TIME = "SORT_BY_START_TIME"
    STATE = "SORT_BY_STATE"
    UNSPECIFIED = "SORT_BY_UNSPECIFIED"
    USER = "SORT_BY_USER"


class DownloadMode(enum.Enum):
    """How ``Checkpoint.download`` fetches files: AUTO and DIRECT read the checkpoint storage;
    MASTER (through the master) is not offered by Resolute's master."""

    AUTO = "auto"
    DIRECT = "direct"
    MASTER = "master"


def _pages(session: Session, path: str, key: str, params: dict[str, Any] | None = None) -> Any:
    """Every item of a paginated list."""
    offset = 0
    while True:
        answer = session.request(
            "GET", path, params={**(params or {}), "offset": offset, "limit": PAGE}
        )
        items = (answer or {}).get(key) or []
        yield from items
        total = ((answer or {}).get("pagination") or {}).get("total")
        offset += len(items)
        if not items or len(items) < PAGE or (total is not None and offset >= int(total)):
            return


def _ndjson(session: Session, path: str, params: dict[str, Any], timeout: float) -> Iterator[Any]:
    """A streamed list (one JSON object a line), e.g. logs; list values repeat their key."""
    pairs = [
        (k, str(v).lower() if isinstance(v, bool) else v)
        for k, vs in params.items()
        for v in (vs if isinstance(vs, list) else [vs])
        if v is not None
    ]
    query = urllib.parse.urlencode(pairs)
    url = session.master_url + path + (f"?{query}" if query else "")
    request = urllib.request.Request(url, headers=session._headers())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            for raw in answer:
                if raw.strip():
                    yield json.loads(raw)
    except urllib.error.HTTPError as exc:
        raise APIError("GET", path, exc.code, exc.read().decode("utf-8", "replace")) from None


LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _enum(cls: Any, value: Any) -> Any:
    try:
        return cls(value)
    except ValueError:
        return None


def _ordered(items: list[Any], key: Any, descending: bool) -> list[Any]:
    """Sorted by ``key``; items whose key is None go last either way."""
    known = [i for i in items if key(i) is not None]
    unknown = [i for i in items if key(i) is None]
    return sorted(known, key=key, reverse=descending) + unknown


def _descending(order_by: Any) -> bool:
    return order_by is not None and getattr(order_by, "value", order_by) == "ORDER_BY_DESC"
