"""AwsEc2Provisioner with one-time spot requests, through the real boto3 against moto.

moto fulfils every spot request the moment it is made and never shows open, price-too-low or
capacity-not-available. Because its server runs in this process, the `MotoEc2` backdoor sets a
request's state and status inside moto's EC2 backend (`moto.backends.get_backend("ec2")`): open
with a status, failed, cancelled with its instance running, fulfilled later. The provisioner
still reads those states over HTTP through boto3. moto also deletes a cancelled request (AWS
keeps it as cancelled for a while), leaves a request active after its instance is gone (AWS
closes it), stores nothing of a LaunchSpecification but image, type and key (the arguments are
recorded on their way instead), and dates every request 2015-01-01. InvalidTime and
IdempotentParameterMismatch answers come from botocore's Stubber.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import ANY

from provisioners.aws_ec2 import UNSEEN_REQUEST_GRACE, AwsEc2Provisioner
from provisioners.aws_mapping import POOL_TAG, REQUEST_TAG
from provisioners.base import InstanceState, LaunchFailure, LaunchFailureKind
from tests.provisioners.aws_common import AWS_LOGGER, SCRIPT, T0, Clock
from tests.support.moto_server import (
    CallRecorder,
    MotoEc2,
    aws_provisioner,
    stubbed_provisioner,
    tags_of,
)

MOTO_CREATE_TIME = datetime(2015, 1, 1, tzinfo=UTC)  # moto's create time of every spot request


def spot(moto: MotoEc2, **overrides: Any) -> AwsEc2Provisioner:
    return aws_provisioner(moto, spot=True, **overrides)


def only_request(moto: MotoEc2) -> str:
    (request,) = moto.spot_requests()
    return str(request["SpotInstanceRequestId"])


class TestSpotLaunch:
    def test_request_fields(self, moto_ec2: MotoEc2) -> None:
        subnet, group = moto_ec2.network()
        profile = moto_ec2.instance_profile()
        recorder = CallRecorder(moto_ec2)
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
            assert moto_ec2.user_data(request["InstanceId"]) == SCRIPT  # base64 exactly once

    def test_max_price_is_sent_when_set(self, moto_ec2: MotoEc2) -> None:
        recorder = CallRecorder(moto_ec2)
        spot(moto_ec2, client_factory=recorder, spot_max_price="0.90").launch(1, request_id="p")
        assert recorder.params("request_spot_instances")[0]["SpotPrice"] == "0.90"
        assert moto_ec2.spot_requests()[0]["SpotPrice"] == "0.900000"

    def test_on_demand_placeholder_sends_no_price(self, moto_ec2: MotoEc2) -> None:
        recorder = CallRecorder(moto_ec2)
        spot(moto_ec2, client_factory=recorder, spot_max_price="OnDemand").launch(1, request_id="p")
        assert "SpotPrice" not in recorder.params("request_spot_instances")[0]

    def test_repeated_request_id_creates_no_second_request(self, moto_ec2: MotoEc2) -> None:
        first = spot(moto_ec2).launch(1, request_id="req-again")
        moto_ec2.hold_spot_request_open(only_request(moto_ec2))

        again = spot(moto_ec2).launch(1, request_id="req-again")

        assert again == [only_request(moto_ec2)]  # still open: its request id stands for it
        assert first != again

    def test_invalid_time_moves_valid_from_later(self, offline: MotoEc2) -> None:
        provisioner, stub = stubbed_provisioner(offline, spot=True, clock=Clock())
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

    def test_invalid_time_gives_up_after_six_attempts(self, offline: MotoEc2) -> None:
        provisioner, stub = stubbed_provisioner(offline, spot=True, clock=Clock())
        stub.add_response("describe_spot_instance_requests", {"SpotInstanceRequests": []})
        for _ in range(6):
            stub.add_client_error("request_spot_instances", "InvalidTime")

        with pytest.raises(LaunchFailure) as raised:
            provisioner.launch(1, request_id="req-late")
        assert raised.value.kind is LaunchFailureKind.CONFIG
        stub.assert_no_pending_responses()

    def test_idempotent_mismatch_finds_the_first_request(self, offline: MotoEc2) -> None:
        provisioner, stub = stubbed_provisioner(offline, spot=True)
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
    def test_spot_refusals(self, offline: MotoEc2, code: str, kind: LaunchFailureKind) -> None:
        provisioner, stub = stubbed_provisioner(offline, spot=True)
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
        provisioner, stub = stubbed_provisioner(
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
        recorder = CallRecorder(moto_ec2)
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
        errors = [  # records below ERROR may be captured too when another test set a lower level
            r.getMessage()
            for r in caplog.records
            if r.name == AWS_LOGGER and r.levelno >= logging.ERROR
        ]
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
