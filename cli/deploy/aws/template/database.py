"""RDS PostgreSQL: pinned version, encrypted, snapshotted on delete and on replacement."""

from __future__ import annotations

from cli.deploy.aws.options import POSTGRES_VERSION
from cli.deploy.aws.template.intrinsics import (
    SUBNET_IDS,
    Json,
    checkov_skips,
    get_att,
    ref,
    sub,
    tags,
)

DB_NAME = "resolute"
DB_USER = "resolute"


def database_resources() -> dict[str, Json]:
    """The database outlives its stack as a final snapshot (`down --delete-data` deletes that
    snapshot once the stack is gone)."""
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
            "Metadata": checkov_skips(
                (
                    "CKV_AWS_157",
                    "Multi-AZ doubles the database's cost; the master tolerates a restart, and "
                    "backups plus the final snapshot protect the data",
                ),
                (
                    "CKV_AWS_118",
                    "enhanced monitoring needs one more IAM role and CloudWatch cost; the basic "
                    "RDS metrics are on",
                ),
            ),
            "DeletionPolicy": "Snapshot",
            "UpdateReplacePolicy": "Snapshot",
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
                "EnableIAMDatabaseAuthentication": True,
                "Tags": tags("database"),
            },
        },
    }
