"""The pure half of the AWS provisioner: requests built, answers read, errors classified."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provisioners.aws_mapping import (
    Ec2LaunchSpec,
    classify_error_code,
    client_token,
    instance_from_ec2,
    launch_tags,
    normalize_spot_price,
    read_spot_requests,
    round_skew_up,
    run_instances_request,
    spot_launch_specification,
    spot_request,
)
from provisioners.base import InstanceState, LaunchFailureKind

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SPEC = Ec2LaunchSpec(
    instance_type="p3.8xlarge", image_id="ami-1", ssh_key_name="k", user_data="#!/bin/sh\n"
)


class TestErrorCodes:
    @pytest.mark.parametrize(
        ("code", "status", "kind"),
        [
            ("InsufficientInstanceCapacity", 500, LaunchFailureKind.CAPACITY),
            ("InsufficientHostCapacity", 500, LaunchFailureKind.CAPACITY),
            ("SpotMaxPriceTooLow", 400, LaunchFailureKind.PRICE),
            ("InstanceLimitExceeded", 400, LaunchFailureKind.QUOTA),
            ("VcpuLimitExceeded", 400, LaunchFailureKind.QUOTA),
            ("MaxSpotInstanceCountExceeded", 400, LaunchFailureKind.QUOTA),
            ("SomeNewLimitExceeded", 400, LaunchFailureKind.QUOTA),
            ("RequestLimitExceeded", 503, LaunchFailureKind.TRANSIENT),
            ("RequestLimitExceeded", None, LaunchFailureKind.TRANSIENT),
            ("Throttling", 400, LaunchFailureKind.TRANSIENT),
            ("InternalError", 500, LaunchFailureKind.TRANSIENT),
            ("SomethingNew", 503, LaunchFailureKind.TRANSIENT),
            ("InvalidParameterValue", 400, LaunchFailureKind.CONFIG),
            ("InvalidParameterCombination", 400, LaunchFailureKind.CONFIG),
            ("InvalidAMIID.NotFound", 400, LaunchFailureKind.CONFIG),
            ("InvalidAMIID.Malformed", 400, LaunchFailureKind.CONFIG),
            ("InvalidKeyPair.NotFound", 400, LaunchFailureKind.CONFIG),
            ("InvalidSubnetID.NotFound", 400, LaunchFailureKind.CONFIG),
            ("UnauthorizedOperation", 403, LaunchFailureKind.CONFIG),
            ("OptInRequired", 401, LaunchFailureKind.CONFIG),
            ("SomethingNew", 400, LaunchFailureKind.CONFIG),
        ],
    )
    def test_kind(self, code: str, status: int | None, kind: LaunchFailureKind) -> None:
        assert classify_error_code(code, status) is kind


class TestRequests:
    def test_run_instances_defaults(self) -> None:
        request = run_instances_request(SPEC, {"Name": "n"}, 4, "tok")

        assert request["MinCount"] == 1 and request["MaxCount"] == 4
        assert request["UserData"] == "#!/bin/sh\n"  # boto3 encodes RunInstances user data
        assert request["NetworkInterfaces"] == [
            {"DeviceIndex": 0, "AssociatePublicIpAddress": True, "DeleteOnTermination": True}
        ]
        assert request["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] == 200
        assert "IamInstanceProfile" not in request
        assert request["TagSpecifications"] == [
            {"ResourceType": "instance", "Tags": [{"Key": "Name", "Value": "n"}]}
        ]

    def test_spot_user_data_is_base64(self) -> None:
        encoded = spot_launch_specification(SPEC)["UserData"]
        assert base64.b64decode(encoded).decode() == SPEC.user_data

    def test_spot_request_without_tags_token_or_price(self) -> None:
        request = spot_request(SPEC, {}, 2, token=None, valid_from=T0, max_price=None)

        assert set(request) == {
            "InstanceCount",
            "Type",
            "InstanceInterruptionBehavior",
            "ValidFrom",
            "LaunchSpecification",
        }
        assert "MetadataOptions" not in request["LaunchSpecification"]  # EC2 does not take it

    def test_custom_tags_come_last_and_cannot_hide_ours(self) -> None:
        tags = launch_tags(
            instance_name="n",
            tag_key="managed_by",
            tag_value="m",
            pool="p1",
            master_address="http://m:8080",
            custom_tags={"team": "a"},
        )
        assert list(tags) == [
            "Name",
            "managed_by",
            "determined-resource-pool",
            "determined-master-address",
            "team",
        ]


class TestSmallRules:
    @pytest.mark.parametrize(
        ("price", "sent"),
        [(None, None), ("", None), ("OnDemand", None), ("0.5", "0.5"), ("2", "2"), (".5", ".5")],
    )
    def test_spot_price(self, price: str | None, sent: str | None) -> None:
        assert normalize_spot_price(price) == sent

    @pytest.mark.parametrize("price", ["1.2.3", "abc", ".", "$1", "-1"])
    def test_bad_spot_price(self, price: str) -> None:
        with pytest.raises(ValueError, match="spot_max_price"):
            normalize_spot_price(price)

    def test_client_token(self) -> None:
        assert client_token("req-1") == "req-1"
        long = client_token("x" * 65)
        assert len(long) == 64 and long == client_token("x" * 65) != client_token("y" * 65)
        assert client_token("é").isascii()

    @pytest.mark.parametrize(
        ("seconds", "rounded"),
        [(0, 0), (0.001, 10), (3, 10), (10, 10), (10.5, 20), (-3, 0), (-10, -10), (-13, -10)],
    )
    def test_skew_rounds_up_to_ten_seconds(self, seconds: float, rounded: int) -> None:
        assert round_skew_up(timedelta(seconds=seconds)) == timedelta(seconds=rounded)

    @given(st.timedeltas(min_value=timedelta(hours=-2), max_value=timedelta(hours=2)))
    def test_skew_is_the_least_multiple_not_below(self, skew: timedelta) -> None:
        rounded = round_skew_up(skew)
        assert rounded % timedelta(seconds=10) == timedelta(0)
        assert skew <= rounded < skew + timedelta(seconds=10)


def described(state: str, **extra: Any) -> dict[str, Any]:
    launch = datetime(2026, 3, 1, 13, 0, tzinfo=timezone(timedelta(hours=1)))
    return {"InstanceId": "i-1", "State": {"Name": state}, "LaunchTime": launch, **extra}


class TestInstances:
    @pytest.mark.parametrize(
        ("state", "mapped"),
        [
            ("pending", InstanceState.STARTING),
            ("running", InstanceState.RUNNING),
            ("stopping", InstanceState.STOPPING),
            ("stopped", InstanceState.STOPPED),
            ("shutting-down", InstanceState.TERMINATING),
            ("terminated", None),
        ],
    )
    def test_states(self, state: str, mapped: InstanceState | None) -> None:
        instance = instance_from_ec2(described(state))
        assert (instance and instance.state) == mapped

    def test_fields(self) -> None:
        instance = instance_from_ec2(described("running", InstanceLifecycle="spot"))
        assert instance is not None
        assert instance.agent_name == instance.id == "i-1"
        assert instance.launch_time == T0 and instance.launch_time.tzinfo is UTC
        assert instance.spot is True


def request(request_id: str, state: str, code: str, **extra: Any) -> dict[str, Any]:
    return {
        "SpotInstanceRequestId": request_id,
        "State": state,
        "Status": {"Code": code, "Message": f"{code} explained"},
        "CreateTime": T0,
        **extra,
    }


class TestSpotRequests:
    def test_sorting(self) -> None:
        tags = [{"Key": "Name", "Value": "n"}, {"Key": "aws:ec2spot:fleet", "Value": "x"}]
        view = read_spot_requests(
            [
                request("sir-open", "open", "pending-fulfillment"),
                request("sir-low", "open", "price-too-low"),
                request("sir-ok", "active", "fulfilled", InstanceId="i-ok", Tags=tags),
                request(
                    "sir-cut",
                    "cancelled",
                    "request-canceled-and-instance-running",
                    InstanceId="i-cut",
                ),
                request("sir-bad", "failed", "bad-parameters"),
                request("sir-done", "closed", "instance-terminated-by-user", InstanceId="i-gone"),
            ]
        )

        pseudo = {p.id: p for p in view.pseudo}
        assert set(pseudo) == {"sir-open", "sir-low", "sir-bad"}
        assert pseudo["sir-open"].state is InstanceState.SPOT_REQUEST_PENDING
        assert pseudo["sir-open"].problem is None and pseudo["sir-open"].launch_time == T0
        assert pseudo["sir-low"].problem == "price-too-low: price-too-low explained"
        assert pseudo["sir-bad"].state is InstanceState.UNKNOWN
        assert view.fulfilled == {"i-ok": {"Name": "n"}}
        assert view.orphaned == ["i-cut"]
        assert view.finished == {"sir-cut", "sir-bad", "sir-done"}
        assert set(view.problems) == {"sir-low", "sir-bad"}
        assert view.launched_ids() == ["i-ok", "sir-open", "sir-low"]
