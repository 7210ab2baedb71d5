"""`down`'s agent sweep: cancel and terminate until one listing finds nothing, or say what is
stuck. Answers from a Stubber on the real EC2 client (moto has no slow shutdowns)."""

from __future__ import annotations

from itertools import count
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from cli.deploy.aws.teardown import clear_agents
from cli.errors import CliError
from tests.support.moto_server import ONE_ATTEMPT

TAG = [{"Name": "tag:resolute-cluster", "Values": ["c1"]}]
SPOT_QUERY = {"Filters": [*TAG, {"Name": "state", "Values": ["open", "active"]}]}
INSTANCE_QUERY = {
    "Filters": [
        *TAG,
        {
            "Name": "instance-state-name",
            "Values": ["pending", "running", "stopping", "stopped", "shutting-down"],
        },
    ]
}


def _instances(*pairs: tuple[str, str]) -> dict[str, Any]:
    listed = [{"InstanceId": i, "State": {"Name": state, "Code": 0}} for i, state in pairs]
    return {"Reservations": [{"Instances": listed}] if listed else []}


def _ec2() -> tuple[Any, Stubber]:
    client = boto3.client("ec2", region_name="us-east-1", config=ONE_ATTEMPT)
    return client, Stubber(client)


def test_cancels_requests_terminates_their_instances_and_stops_on_an_empty_listing() -> None:
    ec2, stub = _ec2()
    request = {"SpotInstanceRequestId": "sir-1", "State": "active", "InstanceId": "i-spot"}
    stub.add_response("describe_spot_instance_requests", {"SpotInstanceRequests": [request]},
                      SPOT_QUERY)  # fmt: skip
    stub.add_response("cancel_spot_instance_requests", {}, {"SpotInstanceRequestIds": ["sir-1"]})
    stub.add_response("describe_instances", _instances(("i-agent", "running")), INSTANCE_QUERY)
    stub.add_response("terminate_instances", {}, {"InstanceIds": ["i-agent", "i-spot"]})
    stub.add_response("describe_spot_instance_requests", {"SpotInstanceRequests": []}, SPOT_QUERY)
    stub.add_response("describe_instances", _instances(("i-agent", "shutting-down")),
                      INSTANCE_QUERY)  # fmt: skip
    stub.add_response("describe_spot_instance_requests", {"SpotInstanceRequests": []}, SPOT_QUERY)
    stub.add_response("describe_instances", _instances(), INSTANCE_QUERY)
    said: list[str] = []
    sleeps: list[float] = []
    with stub:
        clear_agents(ec2, "c1", say=said.append, sleep=sleeps.append, poll_s=2.0)
    stub.assert_no_pending_responses()
    assert sleeps == [2.0, 2.0]
    assert said == [
        "Cancelled 1 spot request(s): sir-1",
        "Terminating 2 instance(s): i-agent, i-spot",
    ]


def test_an_instance_that_never_goes_is_named_after_the_timeout() -> None:
    ec2, stub = _ec2()
    ticks = count(step=100)
    for _ in range(2):
        stub.add_response("describe_spot_instance_requests", {"SpotInstanceRequests": []},
                          SPOT_QUERY)  # fmt: skip
        stub.add_response("describe_instances", _instances(("i-stuck", "shutting-down")),
                          INSTANCE_QUERY)  # fmt: skip
    with stub, pytest.raises(CliError, match="still running after 150 s: i-stuck"):
        clear_agents(
            ec2, "c1", say=print, sleep=lambda _: None, clock=lambda: next(ticks), timeout_s=150
        )
    stub.assert_no_pending_responses()
