"""Parameters, conditions and outputs, and the assembly of the whole template."""

from __future__ import annotations

import json

from cli.deploy.aws.options import MASTER_PORT, SCHEDULER_TYPES
from cli.deploy.aws.template.database import database_resources
from cli.deploy.aws.template.iam import iam_resources
from cli.deploy.aws.template.intrinsics import Json, get_att, ref, sub
from cli.deploy.aws.template.master import master_resources
from cli.deploy.aws.template.network import network_resources
from cli.deploy.aws.template.security import security_resources
from cli.deploy.aws.template.storage import storage_resources

DESCRIPTION = "Resolute cluster: master on EC2, RDS PostgreSQL, S3 checkpoints, elastic agents"


def _string(description: str, default: str | None = None, **extra: object) -> Json:
    parameter: Json = {"Type": "String", "Description": description}
    if default is not None:
        parameter["Default"] = default
    parameter.update(extra)
    return parameter


BOOL = {"AllowedValues": ["true", "false"]}
DURATION = {"AllowedPattern": r"^\d+(ns|us|ms|s|m|h)$"}


def parameters() -> dict[str, Json]:
    ami = "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"
    return {
        "VpcId": _string("Existing VPC to deploy into; empty: a new VPC", ""),
        "SubnetIds": {
            "Type": "CommaDelimitedList",
            "Description": "Two subnets of VpcId in different zones (with VpcId only)",
            "Default": "",
        },
        "InboundCidr": _string(
            "Who may reach the master's API and SSH",
            "0.0.0.0/0",
            AllowedPattern=r"^\d{1,3}(\.\d{1,3}){3}/\d{1,2}$",
        ),
        "KeyName": {"Type": "AWS::EC2::KeyPair::KeyName", "Description": "EC2 key pair"},
        "MasterInstanceType": _string("Master instance type", "m6i.large"),
        "MasterImageId": {
            "Type": ami,
            "Description": "Public SSM parameter naming the master's AMI (Debian 12)",
            "Default": "/aws/service/debian/release/12/latest/amd64",
        },
        "AgentImageId": {
            "Type": ami,
            "Description": "Public SSM parameter naming the dynamic agents' AMI",
            "Default": "/aws/service/debian/release/12/latest/amd64",
        },
        "AuxAgentInstanceType": _string("Aux pool instance type", "m5.xlarge"),
        "ComputeAgentInstanceType": _string("Compute pool instance type", "g4dn.metal"),
        "MaxDynamicAgents": {
            "Type": "Number",
            "Description": "Most dynamic agents per pool",
            "Default": 5,
            "MinValue": 1,
            "MaxValue": 1000,
        },
        "MaxAuxContainersPerAgent": {
            "Type": "Number",
            "Description": "Aux containers per aux agent",
            "Default": 16,
            "MinValue": 1,
        },
        "Spot": _string("Compute agents on spot", "false", **BOOL),
        "SpotMaxPrice": _string(
            "Highest spot price (USD/hour); empty: on-demand price",
            "",
            AllowedPattern=r"^(\d+(\.\d*)?|\.\d+)?$",
        ),
        "DbInstanceClass": _string("RDS instance class", "db.m7g.large"),
        "DbAllocatedStorage": {
            "Type": "Number",
            "Description": "RDS storage in GiB",
            "Default": 20,
            "MinValue": 20,
        },
        "MaxIdleAgentPeriod": _string("Idle time before an agent stops", "10m", **DURATION),
        "MaxAgentStartingPeriod": _string("Longest agent start", "20m", **DURATION),
        "SchedulerType": _string("Scheduler", "fair_share", AllowedValues=list(SCHEDULER_TYPES)),
        "PreemptionEnabled": _string("Priority scheduler preemption", "false", **BOOL),
        "MasterTls": _string(
            "The master serves HTTPS with the certificate and key kept in SSM", "false", **BOOL
        ),
        "MasterCertName": _string("Host name the agents expect in the master's certificate", ""),
        "WheelKey": _string("S3 key of the Resolute wheel in the checkpoint bucket"),
        "ResoluteVersion": _string("Version of the CLI that deployed the stack"),
    }


def outputs() -> dict[str, Json]:
    def out(value: object, description: str) -> Json:
        return {"Value": value, "Description": description}

    return {
        "MasterUrl": out(
            {
                "Fn::If": [
                    "MasterTls",
                    sub(f"https://${{MasterAddress}}:{MASTER_PORT}"),
                    sub(f"http://${{MasterAddress}}:{MASTER_PORT}"),
                ]
            },
            "Master URL",
        ),
        "MasterAddress": out(ref("MasterAddress"), "Master's Elastic IP"),
        "MasterId": out(ref("Master"), "Master instance"),
        "CheckpointBucket": out(ref("CheckpointBucket"), "Checkpoint bucket"),
        "DatabaseId": out(ref("Database"), "RDS instance"),
        "DatabaseEndpoint": out(get_att("Database", "Endpoint.Address"), "RDS endpoint"),
        "MasterSecurityGroupId": out(get_att("MasterSecurityGroup", "GroupId"), "Master SG"),
        "AgentSecurityGroupId": out(get_att("AgentSecurityGroup", "GroupId"), "Agent SG"),
        "AgentInstanceProfileArn": out(get_att("AgentInstanceProfile", "Arn"), "Agents' role"),
        "Version": out(ref("ResoluteVersion"), "Resolute version"),
        "Region": out(ref("AWS::Region"), "Region"),
    }


def build_template() -> Json:
    """The whole template."""
    resources: dict[str, Json] = {
        **network_resources(),
        **security_resources(),
        **storage_resources(),
        **database_resources(),
        **iam_resources(),
        **master_resources(),
    }
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": DESCRIPTION,
        "Parameters": parameters(),
        "Conditions": {
            "CreateVpc": {"Fn::Equals": [ref("VpcId"), ""]},
            "MasterTls": {"Fn::Equals": [ref("MasterTls"), "true"]},
        },
        "Resources": resources,
        "Outputs": outputs(),
    }


def render(template: Json) -> str:
    """The checked-in rendering: stable, readable JSON."""
    return json.dumps(template, indent=2) + "\n"


def compact(template: Json) -> str:
    """What is sent: CloudFormation takes at most 51,200 bytes of TemplateBody."""
    return json.dumps(template, separators=(",", ":"))
