"""One moto server per test session, in this process on 127.0.0.1, and EC2 helpers around it.

Code under test reaches moto over HTTP through the real boto3, exactly as it would reach AWS.
A test module's fixture built on `fresh_moto` resets moto before each test and points
every AWS setting of the process at fakes (credentials, region, endpoint, no config files, no
instance metadata), so nothing can reach a real AWS endpoint even by accident.

moto has no timing and never leaves a spot request open: requests are fulfilled the moment they
are made. Because the server runs in this process, `MotoEc2` can reach into moto's EC2 backend to
put a request into the states AWS would show (open with a status, failed, cancelled with its
instance running) and back to fulfilled. That is a backdoor for tests only; the provisioner still
sees those states over HTTP.
"""

from __future__ import annotations

import atexit
import base64
import copy
import ipaddress
import logging
import threading
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

import boto3
import moto.server as moto_server
import pytest
from botocore import xform_name
from botocore.config import Config
from botocore.stub import Stubber
from moto.backends import get_backend
from moto.core import DEFAULT_ACCOUNT_ID

from provisioners.aws_ec2 import AwsEc2Provisioner

REGION = "us-east-1"
LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]

_lock = threading.Lock()
_endpoint: str | None = None


def assert_loopback(url: str) -> None:
    host = urlsplit(url).hostname or ""
    assert ipaddress.ip_address(host).is_loopback, f"not a loopback endpoint: {url}"


def moto_endpoint() -> str:
    """The session's moto server, started on first use and stopped when the process exits."""
    global _endpoint
    with _lock:
        if _endpoint is None:
            # One line per request at INFO would bury a failing test's own log.
            logging.getLogger("werkzeug").setLevel(logging.WARNING)
            server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            atexit.register(server.stop)
            host, port = server.get_host_and_port()
            _endpoint = f"http://{host}:{port}"
        assert_loopback(_endpoint)
        return _endpoint


def reset_moto(endpoint: str) -> None:
    request = urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


@dataclass(frozen=True)
class MotoEc2:
    """A reset moto, a client to look at what it stores, and the spot backdoor."""

    endpoint: str
    region: str = REGION
    _clients: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def client(self, service: str = "ec2") -> Any:
        """A client of boto3's default session (a fresh session per client costs 0.2 s)."""
        if service not in self._clients:
            self._clients[service] = boto3.client(
                service, endpoint_url=self.endpoint, region_name=self.region
            )
        return self._clients[service]

    def backend(self) -> Any:
        """moto's in-process EC2 backend (tests only: it is moto's internals)."""
        return get_backend("ec2")[DEFAULT_ACCOUNT_ID][self.region]

    @cached_property
    def image_id(self) -> str:
        """An AMI of our own (listing moto's 1,300 stock AMIs takes seconds)."""
        answer = self.client().register_image(
            Name="agent", RootDeviceName="/dev/sda1", Architecture="x86_64"
        )
        return str(answer["ImageId"])

    def network(self) -> tuple[str, str]:
        """A new VPC's subnet and security group ids."""
        ec2 = self.client()
        vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
        group = ec2.create_security_group(GroupName="agents", Description="agents", VpcId=vpc)
        return str(subnet), str(group["GroupId"])

    def instance_profile(self, name: str = "agent") -> str:
        """An IAM instance profile's ARN (moto checks that a launch's profile exists)."""
        answer = self.client("iam").create_instance_profile(InstanceProfileName=name)
        return str(answer["InstanceProfile"]["Arn"])

    def run_instance(self, tags: Mapping[str, str] | None = None) -> str:
        """An instance made behind the provisioner's back, with the given tags."""
        extra: dict[str, Any] = {}
        if tags:
            extra["TagSpecifications"] = [
                {
                    "ResourceType": "instance",
                    "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
                }
            ]
        answer = self.client().run_instances(
            ImageId=self.image_id, MinCount=1, MaxCount=1, InstanceType="t3.micro", **extra
        )
        return str(answer["Instances"][0]["InstanceId"])

    def describe(self, instance_id: str) -> dict[str, Any]:
        reservations = self.client().describe_instances(InstanceIds=[instance_id])["Reservations"]
        return dict(reservations[0]["Instances"][0])

    def user_data(self, instance_id: str) -> str:
        """The instance's user data as EC2 stores it, decoded once."""
        attribute = self.client().describe_instance_attribute(
            InstanceId=instance_id, Attribute="userData"
        )
        return base64.b64decode(attribute["UserData"]["Value"]).decode()

    def live_instance_ids(self) -> list[str]:
        state = {"Name": "instance-state-name", "Values": LIVE_STATES}
        pages = self.client().get_paginator("describe_instances").paginate(Filters=[state])
        return [i["InstanceId"] for p in pages for r in p["Reservations"] for i in r["Instances"]]

    def spot_requests(self) -> list[dict[str, Any]]:
        return list(self.client().describe_spot_instance_requests()["SpotInstanceRequests"])

    def set_instance_state(self, instance_id: str, name: str, code: int) -> None:
        """Backdoor: moto instances are running at once and never stop or shut down slowly."""
        state = self.backend().get_instance(instance_id)._state
        state.name, state.code = name, code

    # -- the spot backdoor ------------------------------------------------------------------

    def _request(self, request_id: str) -> Any:
        return self.backend().spot_instance_requests[request_id]

    def _drop_instance(self, request: Any) -> None:
        if request.instance is not None:
            self.backend().terminate_instances([request.instance.id])
        # moto then leaves InstanceId out of the request, as AWS does for an unfulfilled one.
        request.instance = None

    def hold_spot_request_open(
        self, request_id: str, code: str = "pending-fulfillment", message: str = ""
    ) -> None:
        """Make a request open and unfulfilled, with the given status (its instance goes)."""
        request = self._request(request_id)
        self._drop_instance(request)
        request.state, request._status_code, request.status_message = "open", code, message

    def fulfil_spot_request(self, request_id: str) -> str:
        """Fulfil an open request with a new (untagged) instance; returns the instance id."""
        request = self._request(request_id)
        request.instance = request.launch_instance()
        request.state, request._status_code, request.status_message = "active", "fulfilled", ""
        return str(request.instance.id)

    def end_spot_request(
        self, request_id: str, state: str, code: str, message: str = "", *, keep_instance: bool
    ) -> None:
        """Put a request in a terminal state (failed, closed, cancelled) with the given status."""
        request = self._request(request_id)
        if not keep_instance:
            self._drop_instance(request)
        request.state, request._status_code, request.status_message = state, code, message


def fake_aws_environment(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    """Point every AWS setting of this process at fakes and `endpoint` (which must be loopback)."""
    assert_loopback(endpoint)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ROLE_ARN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)  # also catches a client made without one
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def fresh_moto(monkeypatch: pytest.MonkeyPatch) -> MotoEc2:
    """Body of a test module's fixture: a reset moto, every AWS setting of the process faked.

    Only the reset before a test is needed: whatever a test leaves, the next one resets.
    """
    endpoint = moto_endpoint()
    fake_aws_environment(monkeypatch, endpoint)
    # moto builds 1,300 stock AMIs (with volumes and snapshots) per reset: 0.3 s of CPU a test.
    # The server runs in this process and reads this when it next builds its EC2 backend.
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
    reset_moto(endpoint)
    return MotoEc2(endpoint)


# Nothing listens on the discard port: for tests whose answers all come from a Stubber.
OFFLINE_ENDPOINT = "http://127.0.0.1:9"


def offline_aws(monkeypatch: pytest.MonkeyPatch) -> MotoEc2:
    """Faked AWS settings and no server at all (no moto reset to pay for)."""
    fake_aws_environment(monkeypatch, OFFLINE_ENDPOINT)
    return MotoEc2(OFFLINE_ENDPOINT)


def aws_provisioner(moto: MotoEc2, **overrides: Any) -> AwsEc2Provisioner:
    """An AwsEc2Provisioner for pool "p1" on this moto, with test defaults; see its signature."""
    kwargs: dict[str, Any] = {
        "region": moto.region,
        "endpoint_url": moto.endpoint,
        "pool": "p1",
        "tag_key": "managed_by",
        "tag_value": "resolute-tests",
        "ssh_key_name": "agents",
        "instance_type": "g4dn.xlarge",
        "user_data": "#!/bin/bash\necho 'agent for p1'\n",
        "master_address": "http://10.0.0.2:8080",
        "slots_per_instance": 1,
        "clock_skew": timedelta(0),
        # The provisioner's own default makes a boto3 session per client: 0.2 s a test.
        "client_factory": lambda: boto3.client(
            "ec2", endpoint_url=moto.endpoint, region_name=moto.region
        ),
        **overrides,
    }
    if "image_id" not in kwargs:
        kwargs["image_id"] = moto.image_id
    assert_loopback(kwargs["endpoint_url"])
    return AwsEc2Provisioner(**kwargs)


ONE_ATTEMPT = Config(retries={"total_max_attempts": 1})  # stubbed answers are not retried


class CallRecorder:
    """Client factory whose clients note each call's arguments on their way to moto.

    moto keeps only part of what a request asks for; this shows all of it.
    """

    def __init__(self, moto: MotoEc2) -> None:
        self.moto = moto
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self) -> Any:
        client = boto3.client(
            "ec2", endpoint_url=self.moto.endpoint, region_name=self.moto.region, config=ONE_ATTEMPT
        )
        client.meta.events.register("provide-client-params.ec2", self._note)
        return client

    def _note(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls.append((xform_name(model.name), copy.deepcopy(params)))

    def params(self, operation: str) -> list[dict[str, Any]]:
        return [p for name, p in self.calls if name == operation]


def stubbed_provisioner(moto: MotoEc2, **overrides: Any) -> tuple[AwsEc2Provisioner, Stubber]:
    """A provisioner whose client answers from a botocore Stubber: nothing is sent anywhere."""
    client = boto3.client(
        "ec2", endpoint_url=moto.endpoint, region_name=moto.region, config=ONE_ATTEMPT
    )
    stub = Stubber(client)
    stub.activate()
    overrides.setdefault("image_id", "ami-12345678")
    return aws_provisioner(moto, client_factory=lambda: client, **overrides), stub


def tags_of(described: Mapping[str, Any]) -> dict[str, str]:
    """Tags of a described instance or spot request, as a dict."""
    return {t["Key"]: t["Value"] for t in described.get("Tags", [])}
