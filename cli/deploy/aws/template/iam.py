"""Roles and instance profiles of the master and the agents, scoped to the cluster."""

from __future__ import annotations

from cli.deploy.aws.options import CLUSTER_TAG
from cli.deploy.aws.template.intrinsics import Json, get_att, ref, sub

ASSUME_EC2 = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
BUCKET = get_att("CheckpointBucket", "Arn")
OBJECTS = sub("${CheckpointBucket.Arn}/*")
OWN_TAG = {"StringEquals": {f"aws:ResourceTag/{CLUSTER_TAG}": ref("AWS::StackName")}}
REQUEST_TAG = {"StringEquals": {f"aws:RequestTag/{CLUSTER_TAG}": ref("AWS::StackName")}}


def _bucket_statement() -> list[Json]:
    return [
        {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": BUCKET},
        {
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
            "Resource": OBJECTS,
        },
    ]


def _master_policy() -> Json:
    return {
        "Version": "2012-10-17",
        "Statement": [
            *_bucket_statement(),
            {
                "Sid": "SecretsOfThisCluster",
                "Effect": "Allow",
                "Action": ["ssm:GetParameter", "ssm:GetParameters"],
                "Resource": sub(
                    "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
                    ":parameter/resolute/${AWS::StackName}/*"
                ),
            },
            {
                # Describe calls cannot be scoped to resources (an AWS limit).
                "Sid": "See",
                "Effect": "Allow",
                "Action": [
                    "ec2:DescribeInstances",
                    "ec2:DescribeSpotInstanceRequests",
                    "ec2:DescribeInstanceStatus",
                ],
                "Resource": "*",
            },
            {
                "Sid": "LaunchOnlyTaggedWithThisCluster",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:RequestSpotInstances"],
                "Resource": [
                    sub("arn:${AWS::Partition}:ec2:*:*:instance/*"),
                    sub("arn:${AWS::Partition}:ec2:*:*:spot-instances-request/*"),
                ],
                "Condition": REQUEST_TAG,
            },
            {
                "Sid": "LaunchUsing",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:RequestSpotInstances"],
                "Resource": [
                    sub("arn:${AWS::Partition}:ec2:*::image/*"),
                    sub("arn:${AWS::Partition}:ec2:*:*:subnet/*"),
                    sub("arn:${AWS::Partition}:ec2:*:*:network-interface/*"),
                    sub("arn:${AWS::Partition}:ec2:*:*:security-group/*"),
                    sub("arn:${AWS::Partition}:ec2:*:*:volume/*"),
                    sub("arn:${AWS::Partition}:ec2:*:*:key-pair/*"),
                ],
            },
            {
                "Sid": "TagWhatItLaunches",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": "*",
                "Condition": REQUEST_TAG,
            },
            {
                "Sid": "StopOnlyThisClustersAgents",
                "Effect": "Allow",
                "Action": ["ec2:TerminateInstances", "ec2:CancelSpotInstanceRequests"],
                "Resource": "*",
                "Condition": OWN_TAG,
            },
            {
                "Sid": "GiveAgentsTheirRole",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": get_att("AgentRole", "Arn"),
            },
        ],
    }


def _role(name: str, policy: Json) -> Json:
    return {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": ASSUME_EC2,
            "Policies": [{"PolicyName": name, "PolicyDocument": policy}],
            "Tags": [{"Key": CLUSTER_TAG, "Value": ref("AWS::StackName")}],
        },
    }


def iam_resources() -> dict[str, Json]:
    agent_policy = {"Version": "2012-10-17", "Statement": _bucket_statement()}
    return {
        "MasterRole": _role("resolute-master", _master_policy()),
        "MasterInstanceProfile": {
            "Type": "AWS::IAM::InstanceProfile",
            "Properties": {"Roles": [ref("MasterRole")]},
        },
        "AgentRole": _role("resolute-agent", agent_policy),
        "AgentInstanceProfile": {
            "Type": "AWS::IAM::InstanceProfile",
            "Properties": {"Roles": [ref("AgentRole")]},
        },
    }
