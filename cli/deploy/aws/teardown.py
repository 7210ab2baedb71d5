"""`down`: agents and spot requests first (until an empty listing holds), then the stack.

It needs nothing but the cluster id: the agents are found by tag, the bucket from the stack's
outputs, so it works from any machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from cli.deploy.aws.clients import Aws
from cli.deploy.aws.events import wait_for_stack
from cli.deploy.aws.inventory import Report, instances, leak_report, spot_requests
from cli.deploy.aws.secrets import delete_secrets
from cli.deploy.aws.stack import CAPABILITIES, describe_stack, outputs_of
from cli.deploy.aws.template.build import build_template, compact
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
    if stack is not None:
        stack_id = stack["StackId"]
        total = len(build_template()["Resources"]) + 1
        if delete_data and not stack["StackStatus"].startswith("ROLLBACK"):
            _drop_retention(cfn, stack, say=say, sleep=sleep, total=total)
            bucket = outputs_of(stack).get("CheckpointBucket")
            if bucket:
                say(f"Emptied s3://{bucket}: {empty_bucket(aws.client('s3'), bucket)} object(s)")
        say(
            f"Deleting stack {cluster_id}"
            + ("" if delete_data else " (the database is snapshotted, the bucket kept)")
        )
        cfn.delete_stack(StackName=stack_id)
        wait_for_stack(cfn, stack_id, cluster_id, total=total, say=say, sleep=sleep)
    else:
        say(f"No stack named {cluster_id} in {aws.region}")
    if delete_data:
        delete_secrets(aws.client("ssm"), cluster_id)
    return leak_report(aws, cluster_id, keep_data=not delete_data)


def _drop_retention(
    cfn: Any,
    stack: dict[str, Any],
    *,
    say: Callable[[str], None],
    sleep: Callable[[float], None],
    total: int,
) -> None:
    """Update to the same template with DeletionPolicy Delete (same parameters)."""
    keep = [{"ParameterKey": p["ParameterKey"], "UsePreviousValue": True}
            for p in stack.get("Parameters", [])]  # fmt: skip
    try:
        cfn.update_stack(
            StackName=stack["StackId"],
            TemplateBody=compact(build_template(keep_data=False)),
            Parameters=keep,
            Capabilities=CAPABILITIES,
        )
    except ClientError as exc:
        if "No updates are to be performed" in str(exc):
            return
        raise
    say("Dropping the snapshot-on-delete and keep-bucket policies (--delete-data)")
    wait_for_stack(cfn, stack["StackId"], stack["StackName"], total=total, say=say, sleep=sleep)
