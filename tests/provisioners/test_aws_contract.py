"""AwsEc2Provisioner keeps the Provisioner contract against moto, on demand and with spot.

moto fulfils spot requests at once, so the spot variant sees instance ids from `launch`, as a
real pool does when capacity is there; open requests are covered in test_aws_ec2.py. The spot
variant also estimates the clock skew for real (a throwaway request, cancelled at once).
"""

from __future__ import annotations

import pytest

from provisioners.aws_ec2 import AwsEc2Provisioner
from provisioners.aws_mapping import POOL_TAG
from tests.provisioners.contract import ProvisionerContract
from tests.support.moto_server import MotoEc2, aws_provisioner, fresh_moto

TAG_KEY, TAG_VALUE = "managed_by", "resolute-tests"


class MotoCloud:
    """The contract's backdoor into moto."""

    def __init__(self, moto: MotoEc2) -> None:
        self.moto = moto

    def mark_running(self, instance_id: str) -> None:
        self.moto.set_instance_state(instance_id, "running", 16)  # moto starts them running

    def external_terminate(self, instance_id: str) -> None:
        self.moto.client().terminate_instances(InstanceIds=[instance_id])

    def list_all_ids(self) -> list[str]:
        return self.moto.live_instance_ids()

    def create_foreign_instances(self) -> list[str]:
        return [
            self.moto.run_instance(),
            self.moto.run_instance({TAG_KEY: TAG_VALUE, POOL_TAG: "p2"}),
            self.moto.run_instance({TAG_KEY: "another-master", POOL_TAG: "p1"}),
        ]


class TestAwsContract(ProvisionerContract):
    poll_timeout = 2.0  # moto is consistent at once; a miss will not heal by waiting
    spot = False

    @pytest.fixture
    def moto(self, monkeypatch: pytest.MonkeyPatch) -> MotoEc2:
        return fresh_moto(monkeypatch)

    @pytest.fixture
    def cloud(self, moto: MotoEc2) -> MotoCloud:
        return MotoCloud(moto)

    @pytest.fixture
    def provisioner(self, moto: MotoEc2) -> AwsEc2Provisioner:
        return aws_provisioner(
            moto, tag_key=TAG_KEY, tag_value=TAG_VALUE, spot=self.spot, clock_skew=None
        )


class TestAwsSpotContract(TestAwsContract):
    spot = True
