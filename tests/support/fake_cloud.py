"""An in-memory cloud and a Provisioner on top of it, for tests of the decider, tick and loop.

`FakeCloud` behaves like the real clouds where the master can tell: launches are idempotent by
request id, listing is filtered by tags, just-launched instances may stay invisible for a few
list calls (`list_lag`) and just-terminated ones may linger (`terminate_lag`), a launch may give
fewer instances than asked (`launch_cap`) or fail (`fail_next_launch`, `fail_every_launch`).
Its clock is injected so launch times are deterministic. It is safe to use from several threads.

`FakeProvisioner` implements provisioners.base.Provisioner against a FakeCloud, scoped by a
cluster tag and a pool tag exactly as AWS and GCP are; it passes tests/provisioners/contract.py.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from provisioners.base import Instance, InstanceState, LaunchFailure

POOL_TAG = "determined-resource-pool"
CLUSTER_TAG = "managed-by"
CLUSTER_TAG_VALUE = "resolute-tests"


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Record:
    """One instance as the cloud stores it; `terminated` ones are kept to answer repeats."""

    id: str
    tags: dict[str, str]
    state: InstanceState
    launch_time: datetime
    spot: bool = False
    problem: str | None = None
    hidden_for: int = 0  # list calls that will still miss it
    linger_for: int = 0  # list calls that will still show it terminating
    terminated: bool = False

    def as_instance(self) -> Instance:
        return Instance(
            id=self.id,
            agent_name=self.id,
            state=self.state,
            launch_time=self.launch_time,
            spot=self.spot,
            problem=self.problem,
        )


@dataclass(frozen=True)
class CloudCall:
    """One call the cloud received, for tests that check the sequence of calls."""

    op: str  # "launch" | "list" | "terminate"
    count: int = 0
    request_id: str | None = None
    ids: tuple[str, ...] = ()
    tags: tuple[tuple[str, str], ...] = field(default=())


class FakeCloud:
    """A thread-safe in-memory cloud; see the module docstring for its knobs."""

    def __init__(
        self,
        clock: Callable[[], datetime] = _utc_now,
        *,
        list_lag: int = 0,
        terminate_lag: int = 0,
        launch_cap: int | None = None,
        initial_state: InstanceState = InstanceState.STARTING,
        id_prefix: str = "fake-",
    ) -> None:
        self.clock = clock
        self.list_lag = list_lag
        self.terminate_lag = terminate_lag
        self.launch_cap = launch_cap
        self.initial_state = initial_state
        self._id_prefix = id_prefix
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}
        self._by_request: dict[str, list[str]] = {}
        self._failures: list[LaunchFailure] = []
        self._always_fail: LaunchFailure | None = None
        self._ids = itertools.count(1)
        self.calls: list[CloudCall] = []

    # -- the API a provisioner uses ------------------------------------------------------------

    def launch(
        self, count: int, *, tags: Mapping[str, str], request_id: str, spot: bool = False
    ) -> list[str]:
        """Create up to `count` instances (at most `launch_cap`); repeats answer the same ids."""
        with self._lock:
            self.calls.append(
                CloudCall("launch", count=count, request_id=request_id, tags=_frozen(tags))
            )
            if request_id in self._by_request:
                return list(self._by_request[request_id])
            if self._failures:
                raise self._failures.pop(0)
            if self._always_fail is not None:
                raise self._always_fail
            given = count if self.launch_cap is None else min(count, self.launch_cap)
            ids = [self._create(dict(tags), spot=spot) for _ in range(max(0, given))]
            self._by_request[request_id] = ids
            return list(ids)

    def list(self, tags: Mapping[str, str]) -> list[Instance]:
        """Live instances carrying all of `tags`, as of this call (lag applies)."""
        with self._lock:
            self.calls.append(CloudCall("list", tags=_frozen(tags)))
            shown: list[Instance] = []
            for record in self._records.values():
                if not _matches(record.tags, tags):
                    continue
                if record.hidden_for > 0:
                    record.hidden_for -= 1
                    continue
                if record.terminated:
                    if record.linger_for > 0:
                        record.linger_for -= 1
                        shown.append(replace(record, state=InstanceState.TERMINATING).as_instance())
                    continue
                shown.append(record.as_instance())
            return sorted(shown, key=lambda i: i.id)

    def terminate(self, ids: Iterable[str], *, tags: Mapping[str, str] | None = None) -> None:
        """Terminate the ids carrying `tags` (all when None); unknown and gone ids are ignored."""
        with self._lock:
            ids = tuple(ids)
            self.calls.append(CloudCall("terminate", ids=ids, tags=_frozen(tags or {})))
            for instance_id in ids:
                record = self._records.get(instance_id)
                if record is None or record.terminated:
                    continue
                if tags is not None and not _matches(record.tags, tags):
                    continue
                self._kill(record, linger=self.terminate_lag)

    # -- failure injection --------------------------------------------------------------------

    def fail_next_launch(self, failure: LaunchFailure, times: int = 1) -> None:
        """The next `times` launches with a new request id raise `failure`."""
        with self._lock:
            self._failures.extend([failure] * times)

    def fail_every_launch(self, failure: LaunchFailure | None) -> None:
        """Every launch with a new request id raises `failure` (None to stop)."""
        with self._lock:
            self._always_fail = failure

    # -- the backdoor (tests/provisioners/contract.py CloudBackdoor and more) -------------------

    def set_state(self, instance_id: str, state: InstanceState) -> None:
        with self._lock:
            self._records[instance_id].state = state

    def mark_running(self, instance_id: str) -> None:
        self.set_state(instance_id, InstanceState.RUNNING)

    def mark_stopped(self, instance_id: str) -> None:
        self.set_state(instance_id, InstanceState.STOPPED)

    def mark_all_running(self) -> None:
        with self._lock:
            for record in self._records.values():
                if not record.terminated:
                    record.state = InstanceState.RUNNING

    def set_problem(self, instance_id: str, problem: str | None) -> None:
        with self._lock:
            self._records[instance_id].problem = problem

    def external_terminate(self, instance_id: str) -> None:
        with self._lock:
            record = self._records.get(instance_id)
            if record is not None and not record.terminated:
                self._kill(record, linger=0)

    def add_instance(
        self,
        tags: Mapping[str, str],
        *,
        state: InstanceState = InstanceState.RUNNING,
        launch_time: datetime | None = None,
        spot: bool = False,
    ) -> str:
        """Put an instance in the cloud directly (no call is recorded, no lag applies)."""
        with self._lock:
            instance_id = self._create(dict(tags), spot=spot, hidden=False)
            record = self._records[instance_id]
            record.state = state
            if launch_time is not None:
                record.launch_time = launch_time
            return instance_id

    def create_foreign_instances(self) -> list[str]:
        return [
            self.add_instance({}),
            self.add_instance({CLUSTER_TAG: CLUSTER_TAG_VALUE, POOL_TAG: "another-pool"}),
            self.add_instance({CLUSTER_TAG: "another-cluster", POOL_TAG: "p1"}),
        ]

    def list_all_ids(self) -> list[str]:
        with self._lock:
            return sorted(r.id for r in self._records.values() if not r.terminated)

    def live_count(self, tags: Mapping[str, str] | None = None) -> int:
        with self._lock:
            return sum(
                1
                for r in self._records.values()
                if not r.terminated and _matches(r.tags, tags or {})
            )

    def calls_of(self, op: str) -> list[CloudCall]:
        with self._lock:
            return [c for c in self.calls if c.op == op]

    # -- internals (called with the lock held) --------------------------------------------------

    def _create(self, tags: dict[str, str], *, spot: bool, hidden: bool = True) -> str:
        instance_id = f"{self._id_prefix}{next(self._ids):06d}"
        self._records[instance_id] = _Record(
            id=instance_id,
            tags=tags,
            state=self.initial_state,
            launch_time=self.clock(),
            spot=spot,
            hidden_for=self.list_lag if hidden else 0,
        )
        return instance_id

    def _kill(self, record: _Record, *, linger: int) -> None:
        record.terminated = True
        record.hidden_for = 0
        record.linger_for = linger


def _matches(have: Mapping[str, str], want: Mapping[str, str]) -> bool:
    return all(have.get(key) == value for key, value in want.items())


def _frozen(tags: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(tags.items()))


class FakeProvisioner:
    """A Provisioner for one pool of a FakeCloud, tag-scoped like the real ones."""

    def __init__(
        self,
        cloud: FakeCloud,
        pool: str,
        slots_per_instance: int,
        *,
        cluster_tag_value: str = CLUSTER_TAG_VALUE,
        spot: bool = False,
    ) -> None:
        self.cloud = cloud
        self.pool = pool
        self.spot = spot
        self._slots_per_instance = slots_per_instance
        self.tags: dict[str, str] = {CLUSTER_TAG: cluster_tag_value, POOL_TAG: pool}

    @property
    def slots_per_instance(self) -> int:
        return self._slots_per_instance

    def launch(self, count: int, *, request_id: str) -> list[str]:
        """Start up to `count` instances; raises LaunchFailure as injected into the cloud."""
        if count <= 0:
            return []
        return self.cloud.launch(count, tags=self.tags, request_id=request_id, spot=self.spot)

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Terminate this pool's instances among `instance_ids`; others are left alone."""
        if instance_ids:
            self.cloud.terminate(instance_ids, tags=self.tags)

    def list(self) -> list[Instance]:
        return self.cloud.list(self.tags)
