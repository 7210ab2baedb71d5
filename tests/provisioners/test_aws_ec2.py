"""AwsEc2Provisioner through the real boto3 against moto in server mode (tests/support/moto_server).

What moto cannot show, and how these tests cover it:

- moto keeps only part of a launch request (nothing of a spot LaunchSpecification but image,
  type and key) and launches MinCount instances, not MaxCount: the exact arguments are recorded
  from boto3's own `provide-client-params` event on the way to moto, next to what moto stored.
- moto fulfils every spot request at once and never shows open, price-too-low or
  capacity-not-available: the `MotoEc2` backdoor sets a request's state and status inside moto's
  in-process backend; the provisioner still reads them over HTTP.
- moto never answers InsufficientInstanceCapacity, quota errors, throttling, InvalidTime or
  IdempotentParameterMismatch, and knows no ClientToken idempotency: those answers come from
  botocore's Stubber on a client the provisioner is given.
- moto deletes a cancelled spot request (AWS keeps it as cancelled for a while) and leaves a
  request active after its instance is gone (AWS closes it): the tests accept both.
"""

from __future__ import annotations

import base64
import copy
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from provisioners.aws_ec2 import UNSEEN_REQUEST_GRACE, AwsEc2Provisioner, Ec2Error
from provisioners.aws_mapping import MASTER_ADDRESS_TAG, POOL_TAG, REQUEST_TAG
from provisioners.base import InstanceState, LaunchFailure, LaunchFailureKind
from tests.support.moto_server import REGION, MotoEc2, aws_provisioner, fresh_moto

boto3 = pytest.importorskip("boto3")
from botocore import xform_name  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.stub import ANY, Stubber  # noqa: E402

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SCRIPT = "#!/bin/bash\nset -e\necho 'agent for p1: ü'\n"
MOTO_CREATE_TIME = datetime(2015, 1, 1, tzinfo=UTC)  # moto's fixed spot request create time
AWS_LOGGER = "provisioners.aws_ec2"
ONE_ATTEMPT = Config(retries={"total_max_attempts": 1})


@pytest.fixture
def moto_ec2(monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoEc2]:
    yield from fresh_moto(monkeypatch)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


class Recorder:
    """Client factory whose clients note every call's arguments before sending them to moto."""

    def __init__(self, moto: MotoEc2) -> None:
        self.moto = moto
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self) -> Any:
        client = boto3.client(
            "ec2", endpoint_url=self.moto.endpoint, region_name=REGION, config=ONE_ATTEMPT
        )
        client.meta.events.register("provide-client-params.ec2", self._note)
        return client

    def _note(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls.append((xform_name(model.name), copy.deepcopy(params)))

    def params(self, operation: str) -> list[dict[str, Any]]:
        return [p for name, p in self.calls if name == operation]


def stubbed(moto: MotoEc2, **overrides: Any) -> tuple[AwsEc2Provisioner, Stubber]:
    """A provisioner whose client answers from a Stubber (nothing is sent, not even to moto)."""
    client = boto3.client("ec2", endpoint_url=moto.endpoint, region_name=REGION, config=ONE_ATTEMPT)
    stub = Stubber(client)
    stub.activate()
    overrides.setdefault("image_id", "ami-12345678")
    return aws_provisioner(moto, client_factory=lambda: client, **overrides), stub


def tags_of(described: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in described.get("Tags", [])}


def user_data(moto: MotoEc2, instance_id: str) -> str:
    attribute = moto.client().describe_instance_attribute(
        InstanceId=instance_id, Attribute="userData"
    )
    return base64.b64decode(attribute["UserData"]["Value"]).decode()


class TestOnDemandLaunch:
    def test_every_field_reaches_ec2(self, moto_ec2: MotoEc2) -> None:
        subnet, group = moto_ec2.network()
        profile = moto_ec2.instance_profile()
        recorder = Recorder(moto_ec2)
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
        assert user_data(moto_ec2, ids[0]) == SCRIPT  # base64 exactly once

    def test_optional_fields_are_left_out(self, moto_ec2: MotoEc2) -> None:
        recorder = Recorder(moto_ec2)
        provisioner = aws_provisioner(moto_ec2, client_factory=recorder, public_ip=False)

        (instance_id,) = provisioner.launch(1, request_id="req-bare")

        (sent,) = recorder.params("run_instances")
        assert "IamInstanceProfile" not in sent
        assert sent["NetworkInterfaces"] == [
            {"DeviceIndex": 0, "AssociatePublicIpAddress": False, "DeleteOnTermination": True}
        ]
        assert "IamInstanceProfile" not in moto_ec2.describe(instance_id)

    def test_repeated_request_id_returns_the_first_instances(self, moto_ec2: MotoEc2) -> None:
        recorder = Recorder(moto_ec2)
        provisioner = aws_provisioner(moto_ec2, client_factory=recorder)
        first = provisioner.launch(2, request_id="req-same")

        # A fresh provisioner: the master restarted between storing the id and the answer.
        again = aws_provisioner(moto_ec2, client_factory=recorder).launch(2, request_id="req-same")

        assert again == first
        assert len(recorder.params("run_instances")) == 1
        assert provisioner.launch(1, request_id="req-other") != first

    def test_long_request_id_makes_a_valid_client_token(self, moto_ec2: MotoEc2) -> None:
        recorder = Recorder(moto_ec2)
        provisioner = aws_provisioner(moto_ec2, client_factory=recorder)

        provisioner.launch(1, request_id="r" * 100)

        (sent,) = recorder.params("run_instances")
        assert len(sent["ClientToken"]) == 64
        assert sent["TagSpecifications"][0]["Tags"][-1] == {"Key": REQUEST_TAG, "Value": "r" * 100}

    def test_launch_of_zero_calls_nothing(self, moto_ec2: MotoEc2) -> None:
        recorder = Recorder(moto_ec2)
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

    def test_one_by_one_when_ec2_no_longer_knows_one(self, moto_ec2: MotoEc2) -> None:
        provisioner, stub = stubbed(moto_ec2)
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

    def test_other_refusals_raise(self, moto_ec2: MotoEc2) -> None:
        provisioner, stub = stubbed(moto_ec2)
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
        self, moto_ec2: MotoEc2, code: str, status: int, kind: LaunchFailureKind
    ) -> None:
        provisioner, stub = stubbed(moto_ec2)
        stub.add_response("describe_instances", {"Reservations": []})
        stub.add_client_error("run_instances", code, "refused", http_status_code=status)

        with pytest.raises(LaunchFailure) as raised:
            provisioner.launch(2, request_id="req-err")

        assert raised.value.kind is kind
        assert code in raised.value.message

    def test_capacity_is_a_warning(
        self, moto_ec2: MotoEc2, caplog: pytest.LogCaptureFixture
    ) -> None:
        provisioner, stub = stubbed(moto_ec2)
        stub.add_response("describe_instances", {"Reservations": []})
        stub.add_client_error("run_instances", "InsufficientInstanceCapacity", http_status_code=500)

        with caplog.at_level(logging.WARNING), pytest.raises(LaunchFailure) as raised:
            provisioner.launch(1, request_id="req-cap")

        assert raised.value.capacity_unavailable
        assert [r.levelno for r in caplog.records if r.name == AWS_LOGGER] == [logging.WARNING]

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

    def test_unreachable_endpoint_is_transient(self, moto_ec2: MotoEc2) -> None:
        def closed_port() -> Any:
            config = Config(retries={"total_max_attempts": 1}, connect_timeout=1)
            return boto3.client(
                "ec2", endpoint_url="http://127.0.0.1:9", region_name=REGION, config=config
            )

        provisioner = aws_provisioner(moto_ec2, client_factory=closed_port, image_id="ami-1")

        with pytest.raises(LaunchFailure) as raised:
            provisioner.launch(1, request_id="req-down")
        assert raised.value.kind is LaunchFailureKind.TRANSIENT
        with pytest.raises(Ec2Error) as listed:
            provisioner.list()
        assert listed.value.kind is LaunchFailureKind.TRANSIENT

    def test_missing_credentials_are_config(
        self, moto_ec2: MotoEc2, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        provisioner = aws_provisioner(moto_ec2, image_id="ami-1", client_factory=None)

        with pytest.raises(LaunchFailure) as raised:
            provisioner.launch(1, request_id="req-creds")
        assert raised.value.kind is LaunchFailureKind.CONFIG


def spot(moto: MotoEc2, **overrides: Any) -> AwsEc2Provisioner:
    provisioner: AwsEc2Provisioner = aws_provisioner(moto, spot=True, **overrides)
    return provisioner


def only_request(moto: MotoEc2) -> str:
    (request,) = moto.spot_requests()
    return str(request["SpotInstanceRequestId"])


class TestSpotLaunch:
    def test_request_fields(self, moto_ec2: MotoEc2) -> None:
        subnet, group = moto_ec2.network()
        profile = moto_ec2.instance_profile()
        recorder = Recorder(moto_ec2)
        provisioner = spot(
            moto_ec2,
            client_factory=recorder,
            clock=Clock(),
            clock_skew=timedelta(seconds=20),
            subnet_id=subnet,
            security_group_id=group,
            iam_instance_profile_arn=profile,
            user_data=SCRIPT,
        )

        ids = provisioner.launch(2, request_id="req-spot")

        (sent,) = recorder.params("request_spot_instances")
        assert sent["InstanceCount"] == 2
        assert sent["Type"] == "one-time"
        assert sent["InstanceInterruptionBehavior"] == "terminate"
        assert sent["ClientToken"] == "req-spot"
        assert sent["ValidFrom"] == T0 + timedelta(seconds=30)  # skew 20 s + offset 10 s
        assert "SpotPrice" not in sent
        spec = sent["LaunchSpecification"]
        assert spec["BlockDeviceMappings"][0]["Ebs"] == {
            "VolumeSize": 200,
            "VolumeType": "gp2",
            "DeleteOnTermination": True,
        }
        assert spec["NetworkInterfaces"][0]["Groups"] == [group]
        assert spec["IamInstanceProfile"] == {"Arn": profile}
        (tagging,) = sent["TagSpecifications"]
        assert tagging["ResourceType"] == "spot-instances-request"
        requests = moto_ec2.spot_requests()
        assert sorted(ids) == sorted(r["InstanceId"] for r in requests)  # fulfilled at once
        for request in requests:
            assert request["Type"] == "one-time"
            assert request["InstanceInterruptionBehavior"] == "terminate"
            assert tags_of(request)[REQUEST_TAG] == "req-spot"
            assert tags_of(request)[POOL_TAG] == "p1"
            assert request["LaunchSpecification"]["ImageId"] == moto_ec2.image_id
            assert user_data(moto_ec2, request["InstanceId"]) == SCRIPT  # base64 exactly once

    def test_max_price_is_sent_when_set(self, moto_ec2: MotoEc2) -> None:
        recorder = Recorder(moto_ec2)
        spot(moto_ec2, client_factory=recorder, spot_max_price="0.90").launch(1, request_id="p")
        assert recorder.params("request_spot_instances")[0]["SpotPrice"] == "0.90"
        assert moto_ec2.spot_requests()[0]["SpotPrice"] == "0.900000"

    def test_on_demand_placeholder_sends_no_price(self, moto_ec2: MotoEc2) -> None:
        recorder = Recorder(moto_ec2)
        spot(moto_ec2, client_factory=recorder, spot_max_price="OnDemand").launch(1, request_id="p")
        assert "SpotPrice" not in recorder.params("request_spot_instances")[0]

    def test_repeated_request_id_creates_no_second_request(self, moto_ec2: MotoEc2) -> None:
        first = spot(moto_ec2).launch(1, request_id="req-again")
        moto_ec2.hold_spot_request_open(only_request(moto_ec2))

        again = spot(moto_ec2).launch(1, request_id="req-again")

        assert again == [only_request(moto_ec2)]  # still open: its request id stands for it
        assert first != again

    def test_invalid_time_moves_valid_from_later(self, moto_ec2: MotoEc2) -> None:
        provisioner, stub = stubbed(moto_ec2, spot=True, clock=Clock())
        stub.add_response("describe_spot_instance_requests", {"SpotInstanceRequests": []})
        for seconds in (10, 20, 30):
            expected = {**ANY_SPOT, "ValidFrom": T0 + timedelta(seconds=seconds)}
            if seconds < 30:
                stub.add_client_error(
                    "request_spot_instances", "InvalidTime", expected_params=expected
                )
            else:
                stub.add_response("request_spot_instances", spot_answer("sir-a"), expected)

        assert provisioner.launch(1, request_id="req-time") == ["sir-a"]
        stub.assert_no_pending_responses()

    def test_invalid_time_gives_up_after_six_attempts(self, moto_ec2: MotoEc2) -> None:
        provisioner, stub = stubbed(moto_ec2, spot=True, clock=Clock())
        stub.add_response("describe_spot_instance_requests", {"SpotInstanceRequests": []})
        for _ in range(6):
            stub.add_client_error("request_spot_instances", "InvalidTime")

        with pytest.raises(LaunchFailure) as raised:
            provisioner.launch(1, request_id="req-late")
        assert raised.value.kind is LaunchFailureKind.CONFIG
        stub.assert_no_pending_responses()

    def test_idempotent_mismatch_finds_the_first_request(self, moto_ec2: MotoEc2) -> None:
        provisioner, stub = stubbed(moto_ec2, spot=True)
        stub.add_response("describe_spot_instance_requests", {"SpotInstanceRequests": []})
        stub.add_client_error("request_spot_instances", "IdempotentParameterMismatch")
        stub.add_response("describe_spot_instance_requests", spot_answer("sir-first"))

        assert provisioner.launch(1, request_id="req-twice") == ["sir-first"]

    @pytest.mark.parametrize(
        ("code", "kind"),
        [
            ("SpotMaxPriceTooLow", LaunchFailureKind.PRICE),
            ("MaxSpotInstanceCountExceeded", LaunchFailureKind.QUOTA),
            ("InsufficientInstanceCapacity", LaunchFailureKind.CAPACITY),
        ],
    )
    def test_spot_refusals(self, moto_ec2: MotoEc2, code: str, kind: LaunchFailureKind) -> None:
        provisioner, stub = stubbed(moto_ec2, spot=True)
        stub.add_response("describe_spot_instance_requests", {"SpotInstanceRequests": []})
        stub.add_client_error("request_spot_instances", code)

        with pytest.raises(LaunchFailure) as raised:
            provisioner.launch(1, request_id="req-no")
        assert raised.value.kind is kind


ANY_SPOT = {
    "InstanceCount": 1,
    "Type": "one-time",
    "InstanceInterruptionBehavior": "terminate",
    "ValidFrom": ANY,
    "LaunchSpecification": ANY,
    "ClientToken": ANY,
    "TagSpecifications": ANY,
}


def spot_answer(request_id: str, created: datetime = T0, **extra: Any) -> dict[str, Any]:
    request = {
        "SpotInstanceRequestId": request_id,
        "State": "open",
        "CreateTime": created,
        "Status": {"Code": "pending-evaluation"},
        **extra,
    }
    return {"SpotInstanceRequests": [request]}


class TestClockSkew:
    def test_estimate_from_a_throwaway_request(self, moto_ec2: MotoEc2) -> None:
        provisioner, stub = stubbed(
            moto_ec2, spot=True, clock=Clock(), clock_skew=None, sleep=[].append
        )
        probe = {
            "InstanceCount": 1,
            "Type": "one-time",
            "InstanceInterruptionBehavior": "terminate",
            "ValidFrom": T0 + timedelta(hours=100),
            "LaunchSpecification": ANY,
        }
        stub.add_response("describe_spot_instance_requests", {"SpotInstanceRequests": []})
        stub.add_response(
            "request_spot_instances", spot_answer("sir-probe", T0 + timedelta(seconds=3)), probe
        )
        stub.add_client_error(
            "cancel_spot_instance_requests", "InvalidSpotInstanceRequestID.NotFound"
        )
        stub.add_response(
            "cancel_spot_instance_requests", {}, {"SpotInstanceRequestIds": ["sir-probe"]}
        )
        expected = {**ANY_SPOT, "ValidFrom": T0 + timedelta(seconds=20)}  # 3 s -> 10 s, + 10 s
        stub.add_response("request_spot_instances", spot_answer("sir-real"), expected)

        assert provisioner.launch(1, request_id="req-skew") == ["sir-real"]
        stub.assert_no_pending_responses()

    def test_estimate_against_moto_leaves_nothing_behind(self, moto_ec2: MotoEc2) -> None:
        recorder = Recorder(moto_ec2)
        provisioner = spot(moto_ec2, client_factory=recorder, clock_skew=None)

        provisioner.launch(1, request_id="req-probe")
        provisioner.launch(1, request_id="req-probe-2")

        probe, real, _ = recorder.params("request_spot_instances")
        assert "TagSpecifications" not in probe and "ClientToken" not in probe
        assert probe["ValidFrom"] - real["ValidFrom"] > timedelta(hours=99)
        # moto fulfils even the probe and dates requests 2015: the instance goes, the skew is 0.
        assert len(moto_ec2.spot_requests()) == 2
        assert len(moto_ec2.live_instance_ids()) == 2
        assert provisioner.estimate_clock_skew() == timedelta(0)


class TestSpotList:
    def test_fulfilled_instances_get_the_tags_and_imdsv2(self, moto_ec2: MotoEc2) -> None:
        provisioner = spot(moto_ec2)
        (instance_id,) = provisioner.launch(1, request_id="req-ful")
        assert tags_of(moto_ec2.describe(instance_id)) == {}  # moto, like EC2, copies nothing

        listed = provisioner.list()

        assert [(i.id, i.state, i.spot) for i in listed] == [
            (instance_id, InstanceState.RUNNING, True)
        ]
        described = moto_ec2.describe(instance_id)
        assert described["InstanceLifecycle"] == "spot"
        assert tags_of(described) == tags_of(moto_ec2.spot_requests()[0])
        assert described["MetadataOptions"]["HttpTokens"] == "required"
        assert described["MetadataOptions"]["HttpPutResponseHopLimit"] == 2
        assert provisioner.list() == listed  # found by its tags from now on

    def test_open_request_is_a_pseudo_instance(self, moto_ec2: MotoEc2) -> None:
        provisioner = spot(moto_ec2)
        provisioner.launch(1, request_id="req-open")
        request_id = only_request(moto_ec2)
        moto_ec2.hold_spot_request_open(request_id)

        (pseudo,) = provisioner.list()

        assert pseudo.id == pseudo.agent_name == request_id
        assert pseudo.state is InstanceState.SPOT_REQUEST_PENDING
        assert pseudo.launch_time == MOTO_CREATE_TIME
        assert pseudo.spot is True and pseudo.problem is None

    @pytest.mark.parametrize(
        "code",
        [
            "capacity-not-available",
            "price-too-low",
            "bad-parameters",
            "constraint-not-fulfillable",
            "limit-exceeded",
        ],
    )
    def test_problem_statuses_are_shown_and_logged_once(
        self, moto_ec2: MotoEc2, caplog: pytest.LogCaptureFixture, code: str
    ) -> None:
        provisioner = spot(moto_ec2)
        provisioner.launch(1, request_id="req-problem")
        request_id = only_request(moto_ec2)
        moto_ec2.hold_spot_request_open(request_id, code, "AWS explains")

        with caplog.at_level(logging.ERROR):
            (first,) = provisioner.list()
            (second,) = provisioner.list()

        assert first == second
        assert first.state is InstanceState.SPOT_REQUEST_PENDING
        assert first.problem == f"{code}: AWS explains"
        errors = [r.getMessage() for r in caplog.records if r.name == AWS_LOGGER]
        assert len(errors) == 1 and request_id in errors[0] and code in errors[0]

    def test_failed_request_is_shown_once_then_forgotten(self, moto_ec2: MotoEc2) -> None:
        provisioner = spot(moto_ec2)
        provisioner.launch(1, request_id="req-failed")
        request_id = only_request(moto_ec2)
        moto_ec2.end_spot_request(
            request_id, "failed", "bad-parameters", "no such AMI", keep_instance=False
        )

        (shown,) = provisioner.list()

        assert (shown.id, shown.state) == (request_id, InstanceState.UNKNOWN)
        assert shown.problem == "bad-parameters: no such AMI"
        assert provisioner.list() == []

    def test_later_fulfilment_replaces_the_pseudo_instance(self, moto_ec2: MotoEc2) -> None:
        provisioner = spot(moto_ec2)
        provisioner.launch(1, request_id="req-later")
        request_id = only_request(moto_ec2)
        moto_ec2.hold_spot_request_open(request_id)
        assert [i.id for i in provisioner.list()] == [request_id]

        instance_id = moto_ec2.fulfil_spot_request(request_id)

        assert [(i.id, i.state) for i in provisioner.list()] == [
            (instance_id, InstanceState.RUNNING)
        ]
        assert tags_of(moto_ec2.describe(instance_id))[REQUEST_TAG] == "req-later"

    def test_instance_of_a_cancelled_request_is_terminated(self, moto_ec2: MotoEc2) -> None:
        provisioner = spot(moto_ec2)
        (instance_id,) = provisioner.launch(1, request_id="req-cancelled")
        moto_ec2.end_spot_request(
            only_request(moto_ec2),
            "cancelled",
            "request-canceled-and-instance-running",
            keep_instance=True,
        )

        assert provisioner.list() == []
        assert moto_ec2.describe(instance_id)["State"]["Name"] == "terminated"

    def test_terminated_instance_of_an_active_request_is_not_listed(
        self, moto_ec2: MotoEc2
    ) -> None:
        provisioner = spot(moto_ec2)
        (instance_id,) = provisioner.launch(1, request_id="req-reclaimed")
        moto_ec2.client().terminate_instances(InstanceIds=[instance_id])  # a spot reclaim

        assert provisioner.list() == []

    def test_other_pools_requests_are_not_listed(self, moto_ec2: MotoEc2) -> None:
        spot(moto_ec2, pool="p2").launch(1, request_id="req-p2")
        moto_ec2.hold_spot_request_open(only_request(moto_ec2))

        assert spot(moto_ec2).list() == []

    def test_request_ec2_does_not_show_yet_stays_pending_for_a_while(
        self, moto_ec2: MotoEc2
    ) -> None:
        clock = Clock()
        provisioner = spot(moto_ec2, clock=clock)
        provisioner.launch(1, request_id="req-lag")
        request_id = only_request(moto_ec2)
        moto_ec2.hold_spot_request_open(request_id)
        # EC2 is eventually consistent: a request just made may not be describable yet.
        hidden = moto_ec2.backend().spot_instance_requests.pop(request_id)

        (pseudo,) = provisioner.list()
        assert (pseudo.id, pseudo.launch_time) == (request_id, T0)

        clock.now += UNSEEN_REQUEST_GRACE
        assert provisioner.list() == []
        moto_ec2.backend().spot_instance_requests[request_id] = hidden

    def test_a_restarted_master_finds_open_requests_by_tag(self, moto_ec2: MotoEc2) -> None:
        before = spot(moto_ec2)
        before.launch(2, request_id="req-restart")
        request_ids = sorted(r["SpotInstanceRequestId"] for r in moto_ec2.spot_requests())
        for request_id in request_ids:
            moto_ec2.hold_spot_request_open(request_id, "capacity-not-available", "none left")

        after = spot(moto_ec2)  # nothing tracked

        listed = after.list()
        assert sorted(i.id for i in listed) == request_ids
        assert {i.problem for i in listed} == {"capacity-not-available: none left"}
        assert sorted(after.launch(2, request_id="req-restart")) == request_ids
        assert len(moto_ec2.spot_requests()) == 2
        after.terminate(request_ids)
        assert moto_ec2.spot_requests() == [] and after.list() == []


class TestSpotTerminate:
    def test_request_ids_are_cancelled(self, moto_ec2: MotoEc2) -> None:
        provisioner = spot(moto_ec2)
        provisioner.launch(1, request_id="req-cancel")
        request_id = only_request(moto_ec2)
        moto_ec2.hold_spot_request_open(request_id)

        provisioner.terminate([request_id])

        assert moto_ec2.spot_requests() == []  # moto drops cancelled requests
        assert provisioner.list() == []

    def test_a_request_fulfilled_meanwhile_takes_its_instance_along(
        self, moto_ec2: MotoEc2
    ) -> None:
        provisioner = spot(moto_ec2)
        (instance_id,) = provisioner.launch(1, request_id="req-race")

        provisioner.terminate([only_request(moto_ec2)])

        assert moto_ec2.describe(instance_id)["State"]["Name"] == "terminated"

    def test_unknown_and_foreign_requests_are_left_alone(self, moto_ec2: MotoEc2) -> None:
        spot(moto_ec2, pool="p2").launch(1, request_id="req-foreign")
        foreign = only_request(moto_ec2)

        spot(moto_ec2).terminate([foreign, "sir-00000000", "i-0123456789abcdef0"])

        assert only_request(moto_ec2) == foreign
        assert len(moto_ec2.live_instance_ids()) == 1

    def test_on_demand_provisioner_lists_no_requests(self, moto_ec2: MotoEc2) -> None:
        spot(moto_ec2).launch(1, request_id="req-mixed")
        moto_ec2.hold_spot_request_open(only_request(moto_ec2))

        assert aws_provisioner(moto_ec2).list() == []


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
    recorder = Recorder(moto_ec2)

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
    assert user_data(moto_ec2, instance_id) == SCRIPT
