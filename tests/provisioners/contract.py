"""The promises every Provisioner keeps (provisioners/base.py), as one reusable test class.

Each implementation gets a subclass that provides two fixtures:

- ``provisioner``: a Provisioner for pool "p1", allowed to hold about 3 instances;
- ``cloud``: a backdoor into the (fake or emulated) cloud, see `CloudBackdoor`.

The cloud is eventually consistent, so checks on ``list`` poll for up to `poll_timeout` seconds.
Subclasses may override `poll_timeout`, `poll_interval` and `unknown_instance_id`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

import pytest

from provisioners.base import Instance, InstanceState, Provisioner

GONE_OR_GOING = (InstanceState.STOPPING, InstanceState.TERMINATING)
FRESH = (InstanceState.SPOT_REQUEST_PENDING, InstanceState.STARTING, InstanceState.RUNNING)


class CloudBackdoor(Protocol):
    """What the contract needs to see and do behind the provisioner's back."""

    def mark_running(self, instance_id: str) -> None:
        """Make a launched instance (or a fulfilled spot request's instance) running."""
        ...

    def external_terminate(self, instance_id: str) -> None:
        """Terminate an instance as if someone else had (console, spot reclaim)."""
        ...

    def list_all_ids(self) -> list[str]:
        """Every live instance in the cloud, whatever its tags or pool."""
        ...

    def create_foreign_instances(self) -> list[str]:
        """Create instances the provisioner must not list: untagged, and another pool's."""
        ...


class ProvisionerContract:
    """Base class: subclass it and provide the ``provisioner`` and ``cloud`` fixtures."""

    poll_timeout: float = 5.0
    poll_interval: float = 0.05
    # Well-formed for EC2 and a valid GCE name, but never launched by anyone.
    unknown_instance_id: str = "i-0123456789abcdef0"

    def _eventually(
        self, provisioner: Provisioner, done: Callable[[list[Instance]], bool]
    ) -> list[Instance]:
        deadline = time.monotonic() + self.poll_timeout
        listed = provisioner.list()
        while not done(listed):
            if time.monotonic() > deadline:
                pytest.fail(f"list never satisfied the check within {self.poll_timeout}s: {listed}")
            time.sleep(self.poll_interval)
            listed = provisioner.list()
        return listed

    def _shows(self, provisioner: Provisioner, ids: list[str]) -> list[Instance]:
        return self._eventually(provisioner, lambda listed: set(ids) <= {i.id for i in listed})

    def test_launch_returns_ids_that_show_in_list(self, provisioner: Provisioner) -> None:
        ids = provisioner.launch(2, request_id="req-contract-1")
        assert 1 <= len(ids) <= 2
        assert len(set(ids)) == len(ids)
        listed = self._shows(provisioner, ids)
        for instance in listed:
            if instance.id in ids:
                assert instance.state in FRESH
                assert instance.launch_time.tzinfo is not None  # compared with an aware now

    def test_same_request_id_creates_nothing_new(
        self, provisioner: Provisioner, cloud: CloudBackdoor
    ) -> None:
        first = provisioner.launch(1, request_id="req-contract-same")
        self._shows(provisioner, first)
        before = set(cloud.list_all_ids())
        again = provisioner.launch(1, request_id="req-contract-same")
        assert set(cloud.list_all_ids()) == before
        assert set(again) <= set(first) | before
        listed = self._eventually(provisioner, lambda listed: len(listed) >= len(first))
        assert len(listed) == len(first)

    def test_different_request_id_launches_more(self, provisioner: Provisioner) -> None:
        first = provisioner.launch(1, request_id="req-contract-a")
        second = provisioner.launch(1, request_id="req-contract-b")
        assert second
        assert not set(first) & set(second)
        self._shows(provisioner, first + second)

    def test_list_shows_only_this_pools_tagged_instances(
        self, provisioner: Provisioner, cloud: CloudBackdoor
    ) -> None:
        foreign = cloud.create_foreign_instances()
        assert foreign
        ours = provisioner.launch(1, request_id="req-contract-scope")
        listed = self._shows(provisioner, ours)
        assert not {i.id for i in listed} & set(foreign)
        assert set(foreign) <= set(cloud.list_all_ids())

    def test_terminate_removes_from_list(self, provisioner: Provisioner) -> None:
        ids = provisioner.launch(1, request_id="req-contract-term")
        self._shows(provisioner, ids)
        provisioner.terminate(ids)
        self._eventually(
            provisioner,
            lambda listed: all(i.state in GONE_OR_GOING for i in listed if i.id in ids),
        )

    def test_terminate_does_not_touch_foreign_instances(
        self, provisioner: Provisioner, cloud: CloudBackdoor
    ) -> None:
        foreign = cloud.create_foreign_instances()
        provisioner.terminate(foreign)
        assert set(foreign) <= set(cloud.list_all_ids())

    def test_terminate_unknown_id_is_not_an_error(self, provisioner: Provisioner) -> None:
        provisioner.terminate([self.unknown_instance_id])

    def test_terminate_already_terminated_is_not_an_error(
        self, provisioner: Provisioner, cloud: CloudBackdoor
    ) -> None:
        ids = provisioner.launch(1, request_id="req-contract-gone")
        self._shows(provisioner, ids)
        for instance_id in ids:
            cloud.external_terminate(instance_id)
        provisioner.terminate(ids)
        provisioner.terminate(ids)

    def test_marked_running_lists_as_running(
        self, provisioner: Provisioner, cloud: CloudBackdoor
    ) -> None:
        ids = provisioner.launch(1, request_id="req-contract-run")
        self._shows(provisioner, ids)
        for instance_id in ids:
            cloud.mark_running(instance_id)
        self._eventually(
            provisioner,
            lambda listed: any(i.state is InstanceState.RUNNING for i in listed if i.id in ids),
        )

    def test_agent_name_is_non_empty_and_stable(self, provisioner: Provisioner) -> None:
        ids = provisioner.launch(1, request_id="req-contract-name")
        first = {i.id: i.agent_name for i in self._shows(provisioner, ids)}
        second = {i.id: i.agent_name for i in self._shows(provisioner, ids)}
        for instance_id in ids:
            assert first[instance_id]
            assert first[instance_id] == second[instance_id]

    def test_launch_zero_is_a_no_op(self, provisioner: Provisioner, cloud: CloudBackdoor) -> None:
        before = set(cloud.list_all_ids())
        assert provisioner.launch(0, request_id="req-contract-zero") == []
        assert set(cloud.list_all_ids()) == before
        assert provisioner.list() == []

    def test_slots_per_instance_is_not_negative(self, provisioner: Provisioner) -> None:
        assert provisioner.slots_per_instance >= 0
