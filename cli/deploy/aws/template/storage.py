"""The checkpoint bucket: private, encrypted, TLS only; kept on `down` unless asked."""

from __future__ import annotations

from cli.deploy.aws.template.intrinsics import Json, checkov_skips, get_att, ref, sub, tags


def storage_resources() -> dict[str, Json]:
    """The bucket outlives its stack (`down --delete-data` empties and deletes it after)."""
    return {
        "CheckpointBucket": {
            "Type": "AWS::S3::Bucket",
            "Metadata": checkov_skips(
                (
                    "CKV_AWS_18",
                    "access logs would need a second bucket per cluster, to pay for and clean up; "
                    "CloudTrail data events are the place for an audit trail",
                ),
                (
                    "CKV_AWS_21",
                    "checkpoints are written once under unique names and deleted by checkpoint "
                    "GC; versioning would keep every deleted checkpoint's bytes (and cost)",
                ),
            ),
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "BucketEncryption": {
                    "ServerSideEncryptionConfiguration": [
                        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                    ]
                },
                "PublicAccessBlockConfiguration": {
                    "BlockPublicAcls": True,
                    "BlockPublicPolicy": True,
                    "IgnorePublicAcls": True,
                    "RestrictPublicBuckets": True,
                },
                "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
                "Tags": tags("checkpoints"),
            },
        },
        "CheckpointBucketPolicy": {
            "Type": "AWS::S3::BucketPolicy",
            "Properties": {
                "Bucket": ref("CheckpointBucket"),
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "TlsOnly",
                            "Effect": "Deny",
                            "Principal": "*",
                            "Action": "s3:*",
                            "Resource": [
                                get_att("CheckpointBucket", "Arn"),
                                sub("${CheckpointBucket.Arn}/*"),
                            ],
                            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                        }
                    ],
                },
            },
        },
    }
