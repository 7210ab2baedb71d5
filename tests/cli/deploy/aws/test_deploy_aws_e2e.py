"""`det deploy aws` end to end: the real CLI, in a subprocess, in an empty directory, against
moto in server mode (nothing mocked in between). moto makes stacks synchronously and reports no
per-resource events; what it cannot fail is tested with a Stubber in test_events.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.deploy.aws.conftest import (
    CLUSTER,
    DeployWorld,
    deployed_user_data,
    facts_in,
    iam_action,
    master_user_data,
    not_allowed,
    outputs_of,
    params_of,
    secrets_of,
    stack_of,
)
from tests.controlplane.test_tls import self_signed
from tests.support.moto_server import tags_of

pytestmark = pytest.mark.slow

READ_ONLY = re.compile(r"^\S+ (Describe|Get|List|Head)\w*$")


def test_up_list_status_update_dry_run_down(world: DeployWorld) -> None:
    # a dry run before anything exists: reads only, and nothing is made
    first = world.det(*world.up_args("--dry-run"))
    assert "would create stack det-test" in first.stdout and "+++ up would send" in first.stdout
    assert [c for c in world.recorded_calls() if not READ_ONLY.match(c)] == []
    assert world.moto.client("cloudformation").describe_stacks()["Stacks"] == []
    made = [p["Name"] for p in world.moto.client("ssm").describe_parameters()["Parameters"]]
    assert [name for name in made if name.startswith("/resolute/")] == []

    # up, building the wheel of this tree itself
    up = world.det(*world.up_args())
    stack = stack_of(world)
    outputs = outputs_of(stack)
    assert tags_of(stack) == {"resolute-cluster": CLUSTER, "managed-by": "resolute"}
    assert outputs["MasterUrl"] in up.stdout and "admin" in up.stdout
    assert f"/resolute/{CLUSTER}/admin-password" in up.stdout
    params = params_of(stack)
    wheel_key = params["WheelKey"]
    assert re.fullmatch(r"wheels/[0-9a-f]{16}/resolute-[^/]+\.whl", wheel_key)
    s3 = world.moto.client("s3")
    head = s3.head_object(Bucket=outputs["CheckpointBucket"], Key=wheel_key)
    assert head["ContentLength"] > 100_000
    bucket_tags = s3.get_bucket_tagging(Bucket=outputs["CheckpointBucket"])["TagSet"]
    assert {"Key": "resolute-cluster", "Value": CLUSTER} in bucket_tags

    # the passwords are SecureStrings, and in no parameter, output or user-data
    ssm = world.moto.client("ssm")
    described = ssm.describe_parameters()["Parameters"]
    assert {p["Name"]: p["Type"] for p in described if p["Name"].startswith("/resolute/")} == {
        f"/resolute/{CLUSTER}/db-password": "SecureString",
        f"/resolute/{CLUSTER}/admin-password": "SecureString",
    }
    user_data = master_user_data(world, outputs["MasterId"])
    stack_text = json.dumps(stack, default=str)
    for secret in secrets_of(world):
        assert len(secret) >= 24
        assert secret not in user_data and secret not in stack_text
        assert secret not in up.stdout + up.stderr
    assert facts_in(user_data)["max_dynamic_agents"] == 5

    # list and status, from another empty directory: tags and outputs only
    listed = world.det("list", "--region", world.moto.region)
    assert CLUSTER in listed.stdout and outputs["MasterUrl"] in listed.stdout
    status = world.det("status", "--cluster-id", CLUSTER, "--region", world.moto.region)
    assert "CREATE_COMPLETE" in status.stdout and outputs["CheckpointBucket"] in status.stdout

    # update in place: the same stack, the new maximum in the master's user-data
    world.det(*world.up_args("--max-dynamic-agents", "9"))
    updated = stack_of(world)
    assert updated["StackId"] == stack["StackId"]
    assert params_of(updated)["MaxDynamicAgents"] == "9"
    assert updated["StackStatus"] == "UPDATE_COMPLETE"
    # moto keeps the first user-data (AWS stops and starts the instance with the new one):
    # resolve the deployed template's user-data with the deployed parameters instead.
    assert facts_in(deployed_user_data(world, CLUSTER))["max_dynamic_agents"] == 9

    # dry run: a diff and a cost, and nothing but reads (counted by the CLI's own clients)
    dry = world.det(*world.up_args("--max-dynamic-agents", "7", "--dry-run"))
    calls = world.recorded_calls()
    assert calls, "the call hook recorded nothing"
    assert [c for c in calls if not READ_ONLY.match(c)] == []
    assert "MaxDynamicAgents" in dry.stdout and "max_instances: 7" in dry.stdout
    assert "USD/hour" in dry.stdout and "No change was made" in dry.stdout
    assert params_of(stack_of(world))["MaxDynamicAgents"] == "9"

    # down with dynamic agents and spot requests of the cluster running
    ec2 = world.moto.client()
    agent = world.moto.run_instance({"resolute-cluster": CLUSTER})
    spot_tags = [
        {"ResourceType": "spot-instances-request",
         "Tags": [{"Key": "resolute-cluster", "Value": CLUSTER}]}
    ]  # fmt: skip
    spots = ec2.request_spot_instances(
        InstanceCount=2,
        LaunchSpecification={"ImageId": world.moto.image_id, "InstanceType": "g4dn.xlarge"},
        TagSpecifications=spot_tags,
    )["SpotInstanceRequests"]
    spot_instances = [
        r["InstanceId"]
        for r in ec2.describe_spot_instance_requests(
            SpotInstanceRequestIds=[s["SpotInstanceRequestId"] for s in spots]
        )["SpotInstanceRequests"]
    ]
    world.moto.hold_spot_request_open(spots[1]["SpotInstanceRequestId"])
    other = world.moto.run_instance({"resolute-cluster": "someone-else"})

    down = world.det("down", "--cluster-id", CLUSTER, "--region", world.moto.region, "--yes")
    assert "Nothing tagged with cluster" in down.stdout
    assert "Kept on purpose" in down.stdout and outputs["CheckpointBucket"] in down.stdout
    live = set(world.moto.live_instance_ids())
    assert live == {other}, (agent, spot_instances, live)
    open_requests = [r for r in world.moto.spot_requests() if r["State"] in ("open", "active")]
    assert open_requests == []
    stacks = world.moto.client("cloudformation").describe_stacks()["Stacks"]
    assert [s for s in stacks if s["StackStatus"] != "DELETE_COMPLETE"] == []

    # a leftover planted after the teardown is named, and fails the report
    volume = ec2.create_volume(
        AvailabilityZone=f"{world.moto.region}a",
        Size=8,
        TagSpecifications=[
            {"ResourceType": "volume", "Tags": [{"Key": "resolute-cluster", "Value": CLUSTER}]}
        ],
    )["VolumeId"]
    again = world.det(
        "down", "--cluster-id", CLUSTER, "--region", world.moto.region, "--yes", check=False
    )
    assert again.returncode != 0
    assert volume in again.stdout and "left" in again.stderr

    # every call the CLI made is allowed by the least-privilege policy of docs/deploy-aws.md
    assert not_allowed({iam_action(c) for c in world.all_calls}) == set()


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_down_delete_data_leaves_nothing(
    world: DeployWorld, wheel, tmp_path: Path, tls: bool
) -> None:
    pair = self_signed(tmp_path) if tls else ()
    flags = ["--master-tls-cert", str(pair[0]), "--master-tls-key", str(pair[1])] if tls else []
    up = world.det(*world.up_args("--wheel", str(wheel), *flags))
    assert ("https://" in up.stdout) is tls
    bucket = outputs_of(stack_of(world))["CheckpointBucket"]
    s3 = world.moto.client("s3")
    s3.put_object(Bucket=bucket, Key="checkpoints/abc/state.pt", Body=b"weights")

    down = world.det(
        "down", "--cluster-id", CLUSTER, "--region", world.moto.region, "--yes", "--delete-data"
    )
    assert "Kept on purpose" not in down.stdout
    assert bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    names = [p["Name"] for p in world.moto.client("ssm").describe_parameters()["Parameters"]]
    assert [n for n in names if n.startswith("/resolute/")] == []
    assert not_allowed({iam_action(c) for c in world.all_calls}) == set()


def test_bad_input_is_refused_before_any_call(world: DeployWorld) -> None:
    for bad in (
        ["--cluster-id", "a/b"],
        ["--cluster-id", "x\x01y"],
        ["--cluster-id", "ok", "--max-dynamic-agents", "0"],
        ["--cluster-id", "ok", "--scheduler-type", "lottery"],
        ["--cluster-id", "ok", "--add-tag", "aws:owner=me"],
        ["--cluster-id", "ok", "--vpc-id", "vpc-1"],
    ):
        done = world.det("up", "--keypair", "k", *bad, check=False)
        assert done.returncode != 0, bad
        assert "Traceback" not in done.stderr and done.stderr.strip(), bad
        assert world.recorded_calls() == [], bad


def test_status_of_unknown_cluster_is_a_clear_error(world: DeployWorld) -> None:
    done = world.det("status", "--cluster-id", "nobody", "--region", "us-east-1", check=False)
    assert done.returncode == 1
    assert "no cluster 'nobody'" in done.stderr
