"""RDS PostgreSQL: pinned version, encrypted, snapshotted on delete and on replacement."""

from __future__ import annotations

from cli.deploy.aws.options import POSTGRES_VERSION
from cli.deploy.aws.template.intrinsics import SUBNET_IDS, Json, get_att, ref, sub, tags

DB_NAME = "resolute"
DB_USER = "resolute"


def database_resources(*, keep_data: bool) -> dict[str, Json]:
    """`keep_data` False is the variant `down --delete-data` updates the stack to just before
    deleting it: the same template with DeletionPolicy Delete, no copy kept by hand."""
    policy = "Snapshot" if keep_data else "Delete"
    return {
        "DatabaseSubnets": {
            "Type": "AWS::RDS::DBSubnetGroup",
            "Properties": {
                "DBSubnetGroupDescription": "Resolute database subnets",
                "SubnetIds": SUBNET_IDS,
                "Tags": tags("database"),
            },
        },
        "Database": {
            "Type": "AWS::RDS::DBInstance",
            "DeletionPolicy": policy,
            "UpdateReplacePolicy": policy,
            "Properties": {
                "Engine": "postgres",
                "EngineVersion": POSTGRES_VERSION,
                "AutoMinorVersionUpgrade": False,
                "DBInstanceClass": ref("DbInstanceClass"),
                "AllocatedStorage": ref("DbAllocatedStorage"),
                "StorageType": "gp3",
                "StorageEncrypted": True,
                "DBName": DB_NAME,
                "MasterUsername": DB_USER,
                # A dynamic reference: CloudFormation reads the SecureString itself; the value
                # is never a parameter, never in the template, never in user-data.
                "MasterUserPassword": sub(
                    "{{resolve:ssm-secure:/resolute/${AWS::StackName}/db-password}}"
                ),
                "DBSubnetGroupName": ref("DatabaseSubnets"),
                "VPCSecurityGroups": [get_att("DatabaseSecurityGroup", "GroupId")],
                "PubliclyAccessible": False,
                "BackupRetentionPeriod": 7,
                "CopyTagsToSnapshot": True,
                "DeletionProtection": False,
                "Tags": tags("database"),
            },
        },
    }
