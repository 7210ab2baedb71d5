"""The checkpoint bucket: private, encrypted, TLS only; kept on `down` unless asked."""

from __future__ import annotations

from cli.deploy.aws.template.intrinsics import Json, get_att, ref, sub, tags


def storage_resources(*, keep_data: bool) -> dict[str, Json]:
    policy = "Retain" if keep_data else "Delete"
    return {
        "CheckpointBucket": {
            "Type": "AWS::S3::Bucket",
            "DeletionPolicy": policy,
            "UpdateReplacePolicy": policy,
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
