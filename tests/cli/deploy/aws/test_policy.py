"""docs/deploy-aws-policy.json: what the person deploying needs, and no more than listed.

The CLI's own calls are recorded by its call hook in the end-to-end tests
(test_deploy_aws_e2e.py checks them against the policy); the calls CloudFormation makes with
the deployer's credentials cannot be recorded against moto, so they are listed here per resource
type of the template (AWS's "resource type reference" permissions) and checked the same way.
"""

from __future__ import annotations

from cli.deploy.aws.template.build import build_template
from tests.cli.deploy.aws.conftest import allowed_actions, iam_action, not_allowed

CREATED_BY_CLOUDFORMATION = {
    "AWS::EC2::VPC": ["ec2:CreateVpc", "ec2:ModifyVpcAttribute", "ec2:DeleteVpc"],
    "AWS::EC2::InternetGateway": ["ec2:CreateInternetGateway", "ec2:DeleteInternetGateway"],
    "AWS::EC2::VPCGatewayAttachment": ["ec2:AttachInternetGateway", "ec2:DetachInternetGateway"],
    "AWS::EC2::Subnet": ["ec2:CreateSubnet", "ec2:ModifySubnetAttribute", "ec2:DeleteSubnet"],
    "AWS::EC2::RouteTable": ["ec2:CreateRouteTable", "ec2:DeleteRouteTable"],
    "AWS::EC2::Route": ["ec2:CreateRoute", "ec2:DeleteRoute"],
    "AWS::EC2::SubnetRouteTableAssociation": [
        "ec2:AssociateRouteTable",
        "ec2:DisassociateRouteTable",
    ],
    "AWS::EC2::SecurityGroup": [
        "ec2:CreateSecurityGroup",
        "ec2:AuthorizeSecurityGroupIngress",
        "ec2:AuthorizeSecurityGroupEgress",
        "ec2:RevokeSecurityGroupEgress",
        "ec2:DeleteSecurityGroup",
    ],
    "AWS::EC2::SecurityGroupIngress": [
        "ec2:AuthorizeSecurityGroupIngress",
        "ec2:RevokeSecurityGroupIngress",
    ],
    "AWS::S3::Bucket": [
        "s3:CreateBucket",
        "s3:PutEncryptionConfiguration",
        "s3:PutBucketPublicAccessBlock",
        "s3:PutBucketOwnershipControls",
        "s3:PutBucketTagging",
        "s3:DeleteBucket",
    ],
    "AWS::S3::BucketPolicy": ["s3:PutBucketPolicy", "s3:DeleteBucketPolicy"],
    "AWS::RDS::DBSubnetGroup": ["rds:CreateDBSubnetGroup", "rds:DeleteDBSubnetGroup"],
    "AWS::RDS::DBInstance": [
        "rds:CreateDBInstance",
        "rds:AddTagsToResource",
        "rds:CreateDBSnapshot",
        "rds:DeleteDBInstance",
        "ssm:GetParameters",
    ],
    "AWS::IAM::Role": ["iam:CreateRole", "iam:PutRolePolicy", "iam:TagRole", "iam:DeleteRole"],
    "AWS::IAM::InstanceProfile": [
        "iam:CreateInstanceProfile",
        "iam:AddRoleToInstanceProfile",
        "iam:RemoveRoleFromInstanceProfile",
        "iam:DeleteInstanceProfile",
    ],
    "AWS::EC2::Instance": [
        "ec2:RunInstances",
        "ec2:CreateTags",
        "iam:PassRole",
        "ec2:MonitorInstances",
        "ec2:TerminateInstances",
    ],
    "AWS::EC2::LaunchTemplate": ["ec2:CreateLaunchTemplate", "ec2:DeleteLaunchTemplate"],
    "AWS::EC2::EIP": ["ec2:AllocateAddress", "ec2:AssociateAddress", "ec2:ReleaseAddress"],
}


def test_every_resource_type_of_the_template_is_listed() -> None:
    types = {r["Type"] for r in build_template()["Resources"].values()}
    assert types == set(CREATED_BY_CLOUDFORMATION)


def test_the_policy_allows_what_cloudformation_does_for_the_deployer() -> None:
    needed = {a for actions in CREATED_BY_CLOUDFORMATION.values() for a in actions}
    assert not_allowed(needed) == set()


def test_the_policy_has_no_service_wide_wildcard() -> None:
    assert [a for a in allowed_actions() if a.endswith(":*") or a == "*"] == []


def test_action_names_of_s3_calls() -> None:
    assert iam_action("s3 ListBuckets") == "s3:ListAllMyBuckets"
    assert iam_action("cloudformation CreateStack") == "cloudformation:CreateStack"
    assert not_allowed({"s3:ListAllMyBuckets", "iam:CreateUser"}) == {"iam:CreateUser"}
