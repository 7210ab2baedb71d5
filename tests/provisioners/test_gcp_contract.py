"""The GCP provisioner keeps the Provisioner contract against the fake GCE."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from provisioners.gcp_compute import GcpComputeProvisioner
from tests.provisioners.contract import ProvisionerContract
from tests.support.fake_gce import FakeGCE

P, Z = "proj", "zone-a"
MASTER = {"managed-by": "master-1"}


class GceBackdoor:
    """The contract's view behind the provisioner's back, on the fake GCE."""

    def __init__(self, gce: FakeGCE) -> None:
        self.gce = gce

    def mark_running(self, instance_id: str) -> None:
        self.gce.set_status(instance_id, "RUNNING")

    def external_terminate(self, instance_id: str) -> None:
        # Deleted from the console, or a Spot VM reclaimed with termination action DELETE.
        self.gce.remove_instance(instance_id)

    def list_all_ids(self) -> list[str]:
        return [i["name"] for i in self.gce.instances()]

    def create_foreign_instances(self) -> list[str]:
        foreign = {
            "unlabelled": {},
            "other-pool": {**MASTER, "determined-resource-pool": "p2"},
            "other-master": {"managed-by": "master-2", "determined-resource-pool": "p1"},
        }
        for name, labels in foreign.items():
            self.gce.create_instance(name, project=P, zone=Z, labels=labels)
        return list(foreign)


class TestGcpContract(ProvisionerContract):
    poll_interval = 0.01

    @pytest.fixture
    def gce(self) -> Iterator[FakeGCE]:
        with FakeGCE() as fake:
            yield fake

    @pytest.fixture
    def cloud(self, gce: FakeGCE) -> GceBackdoor:
        return GceBackdoor(gce)

    @pytest.fixture
    def provisioner(self, gce: FakeGCE) -> GcpComputeProvisioner:
        return GcpComputeProvisioner(
            project=P,
            zone=Z,
            pool="p1",
            master_url="http://127.0.0.1:8080",
            startup_script="#!/bin/sh\n",
            api_endpoint=gce.endpoint,
            label_value=MASTER["managed-by"],
            gpu_num=0,
            machine_type="n1-standard-4",
            slots_per_instance=1,
            rng=random.Random(0),
            poll_interval=0.01,
        )
