"""`list` and `status`: read from the stacks' tags and outputs, from any machine."""

from __future__ import annotations

from typing import Any

from cli.deploy.aws.clients import Aws
from cli.deploy.aws.inventory import instances, spot_requests
from cli.deploy.aws.options import CLUSTER_TAG, MANAGED_BY_TAG, MANAGED_BY_VALUE
from cli.deploy.aws.stack import describe_stack, outputs_of
from cli.errors import CliError


def _tags(stack: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in stack.get("Tags", [])}


def clusters(aws: Aws) -> list[tuple[str, str, str, str, str]]:
    rows = []
    for page in aws.client("cloudformation").get_paginator("describe_stacks").paginate():
        for stack in page["Stacks"]:
            tags = _tags(stack)
            if tags.get(MANAGED_BY_TAG) != MANAGED_BY_VALUE or CLUSTER_TAG not in tags:
                continue
            outputs = outputs_of(stack)
            rows.append(
                (
                    tags[CLUSTER_TAG],
                    stack["StackStatus"],
                    str(stack["CreationTime"])[:19],
                    outputs.get("MasterUrl", ""),
                    outputs.get("Version", ""),
                )
            )
    return rows


def cluster_status(aws: Aws, cluster_id: str) -> list[tuple[str, str]]:
    stack = describe_stack(aws.client("cloudformation"), cluster_id)
    if stack is None:
        raise CliError(f"no cluster {cluster_id!r} in {aws.region} (det deploy aws list)")
    ec2 = aws.client("ec2")
    outputs = outputs_of(stack)
    master = outputs.get("MasterId", "")
    agents = [i for i in instances(ec2, cluster_id) if i["InstanceId"] != master]
    by_state: dict[str, int] = {}
    for agent in agents:
        by_state[agent["State"]["Name"]] = by_state.get(agent["State"]["Name"], 0) + 1
    pairs = [
        ("Cluster", cluster_id),
        ("Stack status", stack["StackStatus"]),
        ("Master URL", outputs.get("MasterUrl", "")),
        ("Version", outputs.get("Version", "")),
        (
            "Checkpoints",
            f"s3://{outputs['CheckpointBucket']}" if "CheckpointBucket" in outputs else "",
        ),
        ("Database", outputs.get("DatabaseEndpoint", "")),
        ("Dynamic agents", ", ".join(f"{n} {s}" for s, n in sorted(by_state.items())) or "none"),
        ("Open spot requests", str(len(spot_requests(ec2, cluster_id)))),
    ]
    params = {p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])}
    for key in ("MaxDynamicAgents", "ComputeAgentInstanceType", "AuxAgentInstanceType", "Spot"):
        pairs.append((key, params.get(key, "")))
    return pairs
