"""Short spellings of CloudFormation's intrinsic functions and the cluster tag list."""

from __future__ import annotations

from typing import Any

from cli.deploy.aws.options import CLUSTER_TAG, MANAGED_BY_TAG, MANAGED_BY_VALUE

Json = dict[str, Any]


def ref(name: str) -> Json:
    return {"Ref": name}


def sub(text: str) -> Json:
    return {"Fn::Sub": text}


def get_att(resource: str, attribute: str) -> Json:
    return {"Fn::GetAtt": [resource, attribute]}


def if_(condition: str, then: Any, otherwise: Any) -> Json:
    return {"Fn::If": [condition, then, otherwise]}


def tags(name: str) -> list[Json]:
    """The tags every resource carries explicitly (not only through stack-tag propagation, which
    skips some types), so the leak report finds each one by the cluster tag."""
    return [
        {"Key": "Name", "Value": sub(f"${{AWS::StackName}}-{name}")},
        {"Key": CLUSTER_TAG, "Value": ref("AWS::StackName")},
        {"Key": MANAGED_BY_TAG, "Value": MANAGED_BY_VALUE},
    ]


def checkov_skips(*skips: tuple[str, str]) -> Json:
    """Resource Metadata that tells checkov which of its checks do not apply, and why (the same
    reasons are in docs/deploy-aws.md)."""
    return {"checkov": {"skip": [{"id": check, "comment": why} for check, why in skips]}}


VPC_ID = if_("CreateVpc", ref("Vpc"), ref("VpcId"))
SUBNET_IDS = if_("CreateVpc", [ref("SubnetA"), ref("SubnetB")], ref("SubnetIds"))
FIRST_SUBNET = {"Fn::Select": [0, SUBNET_IDS]}
