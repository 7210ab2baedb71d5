"""The in-memory fake keeps the Provisioner contract, with eventual consistency switched on."""

from __future__ import annotations

import pytest

from tests.provisioners.contract import ProvisionerContract
from tests.support.fake_cloud import FakeCloud, FakeProvisioner


class TestFakeContract(ProvisionerContract):
    poll_interval = 0.0  # the fake's lag counts list calls, not seconds

    @pytest.fixture
    def cloud(self) -> FakeCloud:
        return FakeCloud(list_lag=2, terminate_lag=1)

    @pytest.fixture
    def provisioner(self, cloud: FakeCloud) -> FakeProvisioner:
        return FakeProvisioner(cloud, "p1", slots_per_instance=2)
