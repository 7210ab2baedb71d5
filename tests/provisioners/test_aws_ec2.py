"""AwsEc2Provisioner on demand, through the real boto3 against moto in server mode.

One moto server runs in this process for the session (tests/support/moto_server.py). What moto
cannot show, and how these tests cover it:

- moto keeps only part of a launch request and launches MinCount instances, not MaxCount: the
  exact arguments are recorded from boto3's own `provide-client-params` event on the way to
  moto (`CallRecorder`), next to what moto stored.
- moto never answers InsufficientInstanceCapacity, quota errors or throttling, and knows no
  ClientToken idempotency: those answers come from botocore's Stubber on a client the
  provisioner is given (`stubbed_provisioner`); idempotency is shown by the request-id tag.
- moto starts instances running and never stops or shuts them down slowly: the backdoor sets
  pending, stopping and shutting-down in moto's backend.

Spot requests are in test_aws_ec2_spot.py.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.config import Config

from provisioners.aws_ec2 import AwsEc2Provisioner, Ec2Error
from provisioners.aws_mapping import MASTER_ADDRESS_TAG, POOL_TAG, REQUEST_TAG
from provisioners.base import InstanceState, LaunchFailure, LaunchFailureKind
from tests.provisioners.aws_common import AWS_LOGGER, SCRIPT
from tests.support.moto_server import (
    REGION,
    CallRecorder,
    MotoEc2,
    aws_provisioner,
    stubbed_provisioner,
    tags_of,
)


class TestOnDemandLaunch:
    def test_every_field_reaches_ec2(self, moto_ec2: MotoEc2) -> None:
        subnet, group = moto_ec2.network()
        profile = moto_ec2.instance_profile()
        recorder = CallRecorder(moto_ec2)
        provisioner = aws_provisioner(
            moto_ec2,
            client_factory=recorder,
            subnet_id=subnet,
            security_group_id=group,
            iam_instance_profile_arn=profile,
            root_volume_size=150,
            instance_name="agent-vm",
            custom_tags={"team": "vision", "cost-center": "42"},
            user_data=SCRIPT,
        )

        ids = provisioner.launch(3, request_id="req-fields")

        assert len(ids) == 1  # moto launches MinCount; EC2 may too when capacity is short
        (sent,) = recorder.params("run_instances")
        assert (sent["MinCount"], sent["MaxCount"], sent["ClientToken"]) == (1, 3, "req-fields")
        described = moto_ec2.describe(ids[0])
        assert described["ImageId"] == moto_ec2.image_id
        assert described["InstanceType"] == "g4dn.xlarge"
        assert described["KeyName"] == "agents"
        assert described["ClientToken"] == "req-fields"
        assert tags_of(described) == {
            "Name": "agent-vm",
            "managed_by": "resolute-tests",
            POOL_TAG: "p1",
            MASTER_ADDRESS_TAG: "http://10.0.0.2:8080",
            REQUEST_TAG: "req-fields",
            "team": "vision",
            "cost-center": "42",
        }
        (root,) = described["BlockDeviceMappings"]
        assert root["DeviceName"] == "/dev/sda1" and root["Ebs"]["DeleteOnTermination"] is True
        (volume,) = moto_ec2.client().describe_volumes(VolumeIds=[root["Ebs"]["VolumeId"]])[
            "Volumes"
        ]
        assert (volume["Size"], volume["VolumeType"]) == (150, "gp2")
        options = described["MetadataOptions"]
        assert (options["HttpTokens"], options["HttpPutResponseHopLimit"]) == ("required", 2)
        assert options["HttpEndpoint"] == "enabled"
        (nic,) = described["NetworkInterfaces"]
        assert nic["SubnetId"] == subnet
        assert [g["GroupId"] for g in nic["Groups"]] == [group]
        assert nic["Attachment"]["DeleteOnTermination"] is True
        assert nic["Association"]["PublicIp"]
        assert described["IamInstanceProfile"]["Arn"] == profile
        shutdown = moto_ec2.client().describe_instance_attribute(
            InstanceId=ids[0], Attribute="instanceInitiatedShutdownBehavior"
        )
        assert shutdown["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
        assert moto_ec2.user_data(ids[0]) == SCRIPT  # base64 exactly once

    def test_optional_fields_are_left_out(self, moto_ec2: MotoEc2) -> None:
        recorder = CallRecorder(moto_ec2)
        provisioner = aws_provisioner(moto_ec2, client_factory=recorder, public_ip=False)

        (instance_id,) = provisioner.launch(1, request_id="req-bare")

        (sent,) = recorder.params("run_instances")
        assert "IamInstanceProfile" not in sent
        assert sent["NetworkInterfaces"] == [
            {"DeviceIndex": 0, "AssociatePublicIpAddress": False, "DeleteOnTermination": True}
        ]
        assert "IamInstanceProfile" not in moto_ec2.describe(instance_id)

    def test_repeated_request_id_returns_the_first_instances(self, moto_ec2: MotoEc2) -> None:
        recorder = CallRecorder(moto_ec2)
        provisioner = aws_provisioner(moto_ec2, client_factory=recorder)
        first = provisioner.launch(2, request_id="req-same")

        # A fresh provisioner: the master restarted between storing the id and the answer.
        again = aws_provisioner(moto_ec2, client_factory=recorder).launch(2, request_id="req-same")

        assert again == first
        assert len(recorder.params("run_instances")) == 1
        assert provisioner.launch(1, request_id="req-other") != first

    def test_long_request_id_makes_a_valid_client_token(self, moto_ec2: MotoEc2) -> None:
        recorder = CallRecorder(moto_ec2)
        provisioner = aws_provisioner(moto_ec2, client_factory=recorder)

        provisioner.launch(1, request_id="r" * 100)

        (sent,) = recorder.params("run_instances")
        assert len(sent["ClientToken"]) == 64
        assert sent["TagSpecifications"][0]["Tags"][-1] == {"Key": REQUEST_TAG, "Value": "r" * 100}

    def test_launch_of_zero_calls_nothing(self, moto_ec2: MotoEc2) -> None:
        recorder = CallRecorder(moto_ec2)
        assert aws_provisioner(moto_ec2, client_factory=recorder).launch(0, request_id="z") == []
        assert recorder.calls == []


class TestList:
    def test_states_times_and_names(self, moto_ec2: MotoEc2) -> None:
        provisioner = aws_provisioner(moto_ec2)
        ids = [provisioner.launch(1, request_id=f"req-{n}")[0] for n in range(5)]
        running, stopped, stopping, going, gone = ids
        moto_ec2.client().stop_instances(InstanceIds=[stopped])
        moto_ec2.set_instance_state(stopping, "stopping", 64)
        moto_ec2.set_instance_state(going, "shutting-down", 32)
        moto_ec2.client().terminate_instances(InstanceIds=[gone])

        listed = {i.id: i for i in provisioner.list()}

        assert {k: v.state for k, v in listed.items()} == {
            running: InstanceState.RUNNING,
            stopped: InstanceState.STOPPED,
            stopping: InstanceState.STOPPING,
            going: InstanceState.TERMINATING,
        }
        instance = listed[running]
        assert instance.agent_name == running
        assert instance.spot is False and instance.problem is None
        assert instance.launch_time == moto_ec2.describe(running)["LaunchTime"]
        assert instance.launch_time.tzinfo is not None

    def test_pending_is_starting(self, moto_ec2: MotoEc2) -> None:
        provisioner = aws_provisioner(moto_ec2)
        (instance_id,) = provisioner.launch(1, request_id="req-pending")
        moto_ec2.set_instance_state(instance_id, "pending", 0)

        assert [i.state for i in provisioner.list()] == [InstanceState.STARTING]

    def test_only_this_pool_and_master(self, moto_ec2: MotoEc2) -> None:
        ours = aws_provisioner(moto_ec2).launch(1, request_id="req-ours")
        aws_provisioner(moto_ec2, pool="p2").launch(1, request_id="req-p2")
        aws_provisioner(moto_ec2, tag_value="other-master").launch(1, request_id="req-m2")
        moto_ec2.run_instance()
        moto_ec2.run_instance({POOL_TAG: "p1"})  # right pool, but not this master's tag

        assert [i.id for i in aws_provisioner(moto_ec2).list()] == ours
        assert len(moto_ec2.live_instance_ids()) == 5


class TestTerminate:
    def test_terminates_ours_and_skips_the_rest(self, moto_ec2: MotoEc2) -> None:
        provisioner = aws_provisioner(moto_ec2)
        ours = provisioner.launch(1, request_id="req-t1") + provisioner.launch(1, request_id="t2")
        foreign = [
            moto_ec2.run_instance(),
            aws_provisioner(moto_ec2, pool="p2").launch(1, request_id="x")[0],
        ]

        provisioner.terminate([*ours, *foreign, "i-0123456789abcdef0", "not-an-id"])

        assert provisioner.list() == []
        assert sorted(moto_ec2.live_instance_ids()) == sorted(foreign)
        provisioner.terminate(ours)  # already terminated: nothing to do

    def test_one_by_one_when_ec2_no_longer_knows_one(self, offline: MotoEc2) -> None:
        provisioner, stub = stubbed_provisioner(offline)
        listed = {
            "Reservations": [
                {"Instances": [{"InstanceId": "i-a"}, {"InstanceId": "i-b"}, {"InstanceId": "i-c"}]}
            ]
        }
        stub.add_response("describe_instances", listed)
        not_found = {"service_error_code": "InvalidInstanceID.NotFound", "http_status_code": 400}
        stub.add_client_error("terminate_instances", **not_found)
        stub.add_response("terminate_instances", {}, {"InstanceIds": ["i-a"]})
        stub.add_client_error("terminate_instances", **not_found)
        stub.add_response("terminate_instances", {}, {"InstanceIds": ["i-c"]})

        provisioner.terminate(["i-a", "i-b", "i-c"])

        stub.assert_no_pending_responses()

    def test_other_refusals_raise(self, offline: MotoEc2) -> None:
        provisioner, stub = stubbed_provisioner(offline)
        stub.add_response(
            "describe_instances", {"Reservations": [{"Instances": [{"InstanceId": "i-a"}]}]}
        )
        stub.add_client_error("terminate_instances", "UnauthorizedOperation", http_status_code=403)

        with pytest.raises(Ec2Error) as raised:
            provisioner.terminate(["i-a"])
        assert raised.value.kind is LaunchFailureKind.CONFIG


class TestErrors:
    @pytest.mark.parametrize(
        ("code", "status", "kind"),
        [
            ("InsufficientInstanceCapacity", 500, LaunchFailureKind.CAPACITY),
            ("InstanceLimitExceeded", 400, LaunchFailureKind.QUOTA),
            ("VcpuLimitExceeded", 400, LaunchFailureKind.QUOTA),
            ("InvalidParameterValue", 400, LaunchFailureKind.CONFIG),
            ("InvalidKeyPair.NotFound", 400, LaunchFailureKind.CONFIG),
            ("UnauthorizedOperation", 403, LaunchFailureKind.CONFIG),
            ("RequestLimitExceeded", 503, LaunchFailureKind.TRANSIENT),
            ("InternalError", 500, LaunchFailureKind.TRANSIENT),
        ],
    )
    def test_on_demand_refusals(
        self, offline: MotoEc2, code: str, status: int, kind: LaunchFailureKind
    ) -> None:
        provisioner, stub = stubbed_provisioner(offline)
        stub.add_response("describe_instances", {"Reservations": []})
        stub.add_client_error("run_instances", code, "refused", http_status_code=status)

        with pytest.raises(LaunchFailure) as raised:
            provisioner.launch(2, request_id="req-err")

        assert raised.value.kind is kind
        assert code in raised.value.message

    def test_capacity_is_a_warning(
        self, offline: MotoEc2, caplog: pytest.LogCaptureFixture
    ) -> None:
        provisioner, stub = stubbed_provisioner(offline)
        stub.add_response("describe_instances", {"Reservations": []})
        stub.add_client_error("run_instances", "InsufficientInstanceCapacity", http_status_code=500)

        with caplog.at_level(logging.WARNING), pytest.raises(LaunchFailure) as raised:
            provisioner.launch(1, request_id="req-cap")

        assert raised.value.capacity_unavailable
        levels = [r.levelno for r in caplog.records if r.name == AWS_LOGGER]
        assert [level for level in levels if level >= logging.WARNING] == [logging.WARNING]

    def test_unknown_ami_from_moto(
        self, moto_ec2: MotoEc2, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from moto import settings

        monkeypatch.setattr(settings, "ENABLE_AMI_VALIDATION", True)  # moto's own switch
        provisioner = aws_provisioner(moto_ec2, image_id="ami-00000000")

        with pytest.raises(LaunchFailure) as raised:
            provisioner.launch(1, request_id="req-ami")

        assert raised.value.kind is LaunchFailureKind.CONFIG
        assert raised.value.message.startswith("InvalidAMIID.NotFound")

    def test_unknown_instance_profile_from_moto(self, moto_ec2: MotoEc2) -> None:
        provisioner = aws_provisioner(
            moto_ec2, iam_instance_profile_arn="arn:aws:iam::123456789012:instance-profile/none"
        )

        with pytest.raises(LaunchFailure) as raised:
            provisioner.launch(1, request_id="req-iam")

        assert raised.value.kind is LaunchFailureKind.CONFIG

    def test_unreachable_endpoint_is_transient(self, offline: MotoEc2) -> None:
        def closed_port() -> Any:
            config = Config(retries={"total_max_attempts": 1}, connect_timeout=1)
            return boto3.client(
                "ec2", endpoint_url="http://127.0.0.1:9", region_name=REGION, config=config
            )

        provisioner = aws_provisioner(offline, client_factory=closed_port, image_id="ami-1")

        with pytest.raises(LaunchFailure) as raised:
            provisioner.launch(1, request_id="req-down")
        assert raised.value.kind is LaunchFailureKind.TRANSIENT
        with pytest.raises(Ec2Error) as listed:
            provisioner.list()
        assert listed.value.kind is LaunchFailureKind.TRANSIENT

    def test_missing_credentials_are_config(
        self, offline: MotoEc2, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        provisioner = aws_provisioner(offline, image_id="ami-1", client_factory=None)

        with pytest.raises(LaunchFailure) as raised:
            provisioner.launch(1, request_id="req-creds")
        assert raised.value.kind is LaunchFailureKind.CONFIG


def test_from_config(moto_ec2: MotoEc2) -> None:
    from provisioners.config import parse_provider

    cfg = parse_provider(
        {
            "type": "aws",
            "region": REGION,
            "endpoint_url": moto_ec2.endpoint,
            "image_id": moto_ec2.image_id,
            "ssh_key_name": "agents",
            "instance_type": "g4dn.12xlarge",
            "tag_value": "resolute-tests",
            "spot": True,
            "spot_max_price": "0.5",
            "custom_tags": [{"key": "team", "value": "vision"}],
            "network_interface": {"public_ip": False},
        }
    )
    recorder = CallRecorder(moto_ec2)

    provisioner = AwsEc2Provisioner.from_config(
        cfg,
        pool="p1",
        master_url="http://10.0.0.2:8080",
        setup_script=SCRIPT,
        client_factory=recorder,
        clock_skew=timedelta(0),
    )
    (instance_id,) = provisioner.launch(1, request_id="req-cfg")

    assert provisioner.slots_per_instance == 4
    (sent,) = recorder.params("request_spot_instances")
    assert sent["SpotPrice"] == "0.5"
    assert sent["LaunchSpecification"]["NetworkInterfaces"][0]["AssociatePublicIpAddress"] is False
    assert provisioner.tags["team"] == "vision"
    assert moto_ec2.user_data(instance_id) == SCRIPT
