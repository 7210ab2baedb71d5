"""`down`: agents and spot requests first (until an empty listing holds), then the stack.

It needs nothing but the cluster id: the agents are found by tag, the bucket from the stack's
outputs, so it works from any machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cli.deploy.aws.clients import Aws, ClientError
from cli.deploy.aws.events import wait_for_stack
from cli.deploy.aws.inventory import (
    Report,
    database_snapshots,
    instances,
    leak_report,
    spot_requests,
)
from cli.deploy.aws.secrets import delete_secrets
from cli.deploy.aws.stack import describe_stack, outputs_of
from cli.deploy.aws.template.build import build_template
from cli.errors import CliError


def clear_agents(
    ec2: Any,
    cluster_id: str,
    *,
    say: Callable[[str], None],
    sleep: Callable[[float], None],
    clock: Callable[[], float] = time.monotonic,
    timeout_s: float = 900.0,
    poll_s: float = 5.0,
) -> None:
    """Cancel the cluster's spot requests and terminate its instances (the master among them,
    first of all, so it launches no more) until one listing finds neither."""
    deadline = clock() + timeout_s
    while True:
        requests = spot_requests(ec2, cluster_id)
        if requests:
            ids = [r["SpotInstanceRequestId"] for r in requests]
            ec2.cancel_spot_instance_requests(SpotInstanceRequestIds=ids)
            say(f"Cancelled {len(ids)} spot request(s): {', '.join(ids)}")
        live = instances(ec2, cluster_id)
        to_stop = [i["InstanceId"] for i in live if i["State"]["Name"] != "shutting-down"]
        # A fulfilled request's instance carries the request's tags only once the provisioner
        # has copied them; cancelling the request leaves the instance running (as AWS does).
        to_stop += [
            r["InstanceId"] for r in requests if r.get("InstanceId") not in (None, *to_stop)
        ]
        if to_stop:
            ec2.terminate_instances(InstanceIds=to_stop)
            say(f"Terminating {len(to_stop)} instance(s): {', '.join(to_stop)}")
        if not requests and not live:
            return
        if clock() > deadline:
            left = [i["InstanceId"] for i in live] + [r["SpotInstanceRequestId"] for r in requests]
            raise CliError(f"still running after {timeout_s:g} s: {', '.join(left)}")
        sleep(poll_s)


def empty_bucket(s3: Any, bucket: str) -> int:
    removed = 0
    paginator = s3.get_paginator("list_object_versions")
    for page in paginator.paginate(Bucket=bucket):
        doomed = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                  for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]  # fmt: skip
        if doomed:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": doomed, "Quiet": True})
            removed += len(doomed)
    return removed


def down(
    aws: Aws,
    cluster_id: str,
    *,
    delete_data: bool,
    say: Callable[[str], None],
    sleep: Callable[[float], None],
    agent_timeout_s: float = 900.0,
) -> Report:
    cfn = aws.client("cloudformation")
    stack = describe_stack(cfn, cluster_id)
    clear_agents(aws.client("ec2"), cluster_id, say=say, sleep=sleep, timeout_s=agent_timeout_s)
    bucket = outputs_of(stack).get("CheckpointBucket") if stack else None
    if stack is not None:
        stack_id = stack["StackId"]
        total = len(build_template()["Resources"]) + 1
        kept = "" if delete_data else " (the database is snapshotted, the bucket kept)"
        say(f"Deleting stack {cluster_id}{kept}")
        cfn.delete_stack(StackName=stack_id)
        wait_for_stack(cfn, stack_id, cluster_id, total=total, say=say, sleep=sleep)
    else:
        say(f"No stack named {cluster_id} in {aws.region}")
    if delete_data:
        _delete_data(aws, cluster_id, bucket, say=say)
    return leak_report(aws, cluster_id, keep_data=not delete_data)


def _delete_data(
    aws: Aws, cluster_id: str, bucket: str | None, *, say: Callable[[str], None]
) -> None:
    """What the stack keeps on purpose (its bucket, the final snapshot) and the passwords.
    Done after the stack is gone rather than by updating the stack's deletion policies first:
    it also works on a stack whose creation failed, which cannot be updated."""
    s3 = aws.client("s3")
    if bucket:
        try:
            removed = empty_bucket(s3, bucket)
            s3.delete_bucket(Bucket=bucket)
            say(f"Deleted s3://{bucket} and its {removed} object(s)")
        except ClientError as exc:
            if "NoSuchBucket" not in str(exc):
                raise
    rds = aws.client("rds")
    for snapshot in database_snapshots(rds, cluster_id):
        rds.delete_db_snapshot(DBSnapshotIdentifier=snapshot)
        say(f"Deleted the database snapshot {snapshot}")
    delete_secrets(aws.client("ssm"), cluster_id)
    say("Deleted the cluster's passwords from SSM")
