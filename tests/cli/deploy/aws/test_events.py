"""Stack failures: the failing resource, AWS's reason and a hint. moto never fails a stack for a
quota, so the EIP-limit failure comes from a botocore Stubber on the real CloudFormation client,
and the real `det deploy aws up` command is run in process around it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from cli.deploy.aws.clients import Aws
from cli.deploy.aws.events import first_failure, hint_for, wait_for_stack
from cli.deploy.aws.options import DeployOptions
from cli.deploy.aws.stack import up
from cli.errors import CliError
from tests.support.moto_server import ONE_ATTEMPT, offline_aws

STACK_ID = (
    "arn:aws:cloudformation:us-east-1:123456789012:stack/c1/0f0f0f0f-0000-4000-8000-000000000000"
)
EIP_REASON = (
    "The maximum number of addresses has been reached. (Service: AmazonEC2; Status Code: 400; "
    "Error Code: AddressLimitExceeded; Request ID: 1d2e)"
)
NOW = datetime(2026, 11, 26, tzinfo=UTC)


def _event(
    n: int, logical: str, status: str, reason: str = "", kind: str = "AWS::EC2::EIP"
) -> dict:
    return {
        "StackId": STACK_ID,
        "EventId": f"e{n}",
        "StackName": "c1",
        "LogicalResourceId": logical,
        "ResourceType": kind,
        "Timestamp": NOW,
        "ResourceStatus": status,
        "ResourceStatusReason": reason,
    }


def _stack(status: str) -> dict[str, Any]:
    return {"Stacks": [{"StackName": "c1", "StackId": STACK_ID, "StackStatus": status,
                        "CreationTime": NOW}]}  # fmt: skip


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([], None),
        ([_event(1, "Vpc", "CREATE_COMPLETE", kind="AWS::EC2::VPC")], None),
        # newest first, as AWS lists them: the cancellations that follow are not the cause
        (
            [
                _event(3, "Database", "CREATE_FAILED", "Resource creation cancelled"),
                _event(2, "MasterAddress", "CREATE_FAILED", EIP_REASON),
                _event(1, "Vpc", "CREATE_COMPLETE", kind="AWS::EC2::VPC"),
            ],
            ("MasterAddress", "AddressLimitExceeded"),
        ),
        # the stack's own failure line names no resource
        (
            [_event(2, "c1", "ROLLBACK_FAILED", "x"), _event(1, "Role", "CREATE_FAILED", "boom")],
            ("Role", "boom"),
        ),
    ],
)
def test_first_failure(events: list[dict], expected: tuple[str, str] | None) -> None:
    failure = first_failure(events, "c1")
    if expected is None:
        assert failure is None
    else:
        assert failure is not None
        assert (failure.resource, expected[1] in failure.reason) == (expected[0], True)


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        (EIP_REASON, "Elastic IP"),
        (
            "More vCPU capacity than your current vCPU limit (VcpuLimitExceeded)",
            "vCPU",
        ),
        ("User: arn:aws:iam::1:user/x is not authorized to perform: iam:CreateRole", "policy"),
        ("something nobody has seen", "det deploy aws down"),
    ],
)
def test_hints(reason: str, words: str) -> None:
    assert words in hint_for(reason)


def _stubbed_cfn() -> tuple[Any, Stubber]:
    client = boto3.client("cloudformation", region_name="us-east-1", config=ONE_ATTEMPT)
    return client, Stubber(client)


def test_wait_reports_the_failing_resource_reason_and_hint() -> None:
    client, stub = _stubbed_cfn()
    stub.add_response("describe_stacks", _stack("ROLLBACK_IN_PROGRESS"), {"StackName": STACK_ID})
    stub.add_response(
        "describe_stack_events",
        {"StackEvents": [_event(2, "MasterAddress", "CREATE_FAILED", EIP_REASON),
                         _event(1, "c1", "CREATE_IN_PROGRESS", kind="AWS::CloudFormation::Stack")]},
        {"StackName": STACK_ID},
    )  # fmt: skip
    stub.add_response("describe_stacks", _stack("ROLLBACK_COMPLETE"), {"StackName": STACK_ID})
    stub.add_response("describe_stack_events", {"StackEvents": []}, {"StackName": STACK_ID})
    said: list[str] = []
    with stub, pytest.raises(CliError) as failed:
        wait_for_stack(client, STACK_ID, "c1", total=3, say=said.append, sleep=lambda _: None)
    stub.assert_no_pending_responses()
    message = str(failed.value)
    assert "MasterAddress (AWS::EC2::EIP) CREATE_FAILED" in message
    assert "AddressLimitExceeded" in message and "hint:" in message and "Elastic IP" in message
    assert any("MasterAddress" in line for line in said)


def test_up_prints_resource_reason_and_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """`up` (what the command runs; the CLI prints a CliError as its message, exit 1): SSM and S3
    answer from Stubbers too (nothing is sent anywhere); CloudFormation creates, makes the
    bucket, then fails on the Elastic IP."""
    offline_aws(monkeypatch)
    aws = Aws(region="us-east-1")
    cfn, cfn_stub = _stubbed_cfn()
    ssm = boto3.client("ssm", region_name="us-east-1", config=ONE_ATTEMPT)
    s3 = boto3.client("s3", region_name="us-east-1", config=ONE_ATTEMPT)
    ssm_stub, s3_stub = Stubber(ssm), Stubber(s3)
    cfn_stub.add_client_error(
        "describe_stacks", "ValidationError", "Stack with id c1 does not exist"
    )
    for _ in range(2):
        ssm_stub.add_client_error("get_parameter", "ParameterNotFound", "no")
        ssm_stub.add_response("put_parameter", {"Version": 1}, None)
    cfn_stub.add_response("create_stack", {"StackId": STACK_ID}, None)
    cfn_stub.add_response(
        "describe_stack_resource",
        {"StackResourceDetail": {"LogicalResourceId": "CheckpointBucket",
                                 "PhysicalResourceId": "c1-bucket",
                                 "ResourceType": "AWS::S3::Bucket",
                                 "LastUpdatedTimestamp": NOW,
                                 "ResourceStatus": "CREATE_COMPLETE"}},
        {"StackName": STACK_ID, "LogicalResourceId": "CheckpointBucket"},
    )  # fmt: skip
    s3_stub.add_response("put_object", {}, None)
    cfn_stub.add_response("describe_stacks", _stack("ROLLBACK_COMPLETE"), {"StackName": STACK_ID})
    cfn_stub.add_response(
        "describe_stack_events",
        {"StackEvents": [_event(2, "MasterAddress", "CREATE_FAILED", EIP_REASON)]},
        {"StackName": STACK_ID},
    )
    for name, client in (("cloudformation", cfn), ("ssm", ssm), ("s3", s3)):
        aws.use(name, client)
    wheel = tmp_path / "resolute-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK not really a wheel")
    said: list[str] = []
    with cfn_stub, ssm_stub, s3_stub, pytest.raises(CliError) as failed:
        up(
            aws,
            DeployOptions(cluster_id="c1", keypair="k", region="us-east-1"),
            wheel=wheel,
            new_password=lambda: "generated-password",
            say=said.append,
            sleep=lambda _: None,
        )
    cfn_stub.assert_no_pending_responses()
    message = str(failed.value)
    assert "MasterAddress (AWS::EC2::EIP) CREATE_FAILED" in message
    assert "AddressLimitExceeded" in message
    assert "hint: the account is at its Elastic IP limit" in message
    assert "Creating stack c1" in "\n".join(said)
