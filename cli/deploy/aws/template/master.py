"""The master instance: IMDSv2 only, AMI from a public SSM parameter, an Elastic IP, and the
user-data that installs this very CLI build and starts the master as a systemd service."""

from __future__ import annotations

from pathlib import Path

from cli.deploy.aws.template.intrinsics import FIRST_SUBNET, Json, get_att, ref, tags

BOOT_SCRIPT = Path(__file__).resolve().parent.parent / "master_boot.sh"
BOUNDARY = "==resolute-boot=="
# Attributes by name, not as ${Resource.Attribute} inside the text: moto's Fn::Sub cannot read
# dotted attributes such as Endpoint.Address, and the names read better in the script.
SUB_VARIABLES = {
    "AgentSubnet": FIRST_SUBNET,
    "AgentSecurityGroupId": get_att("AgentSecurityGroup", "GroupId"),
    "AgentInstanceProfileArn": get_att("AgentInstanceProfile", "Arn"),
    "DbHost": get_att("Database", "Endpoint.Address"),
    "DbPort": get_att("Database", "Endpoint.Port"),
}


def user_data_text() -> str:
    """A MIME multipart: cloud-config that runs the script at every boot, then the script."""
    script = BOOT_SCRIPT.read_text()
    return (
        f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"\n'
        "MIME-Version: 1.0\n\n"
        f"--{BOUNDARY}\n"
        'Content-Type: text/cloud-config; charset="us-ascii"\n\n'
        "#cloud-config\n"
        "cloud_final_modules:\n"
        "- [scripts-user, always]\n\n"
        f"--{BOUNDARY}\n"
        'Content-Type: text/x-shellscript; charset="us-ascii"\n\n'
        f"{script}\n"
        f"--{BOUNDARY}--\n"
    )


def master_resources() -> dict[str, Json]:
    return {
        "Master": {
            "Type": "AWS::EC2::Instance",
            # W1035: cfn-lint cannot resolve the subnet list's Fn::If to check its pattern.
            "Metadata": {"cfn-lint": {"config": {"ignore_checks": ["W1035"]}}},
            "Properties": {
                "ImageId": ref("MasterImageId"),
                "InstanceType": ref("MasterInstanceType"),
                "KeyName": ref("KeyName"),
                "IamInstanceProfile": ref("MasterInstanceProfile"),
                # Its own interface, deleted with it: a primary interface left behind would hold
                # the subnet and fail the stack's deletion.
                "NetworkInterfaces": [
                    {
                        "DeviceIndex": "0",
                        "SubnetId": FIRST_SUBNET,
                        "GroupSet": [get_att("MasterSecurityGroup", "GroupId")],
                        "DeleteOnTermination": True,
                    }
                ],
                "EbsOptimized": True,
                "Monitoring": True,
                "LaunchTemplate": {
                    "LaunchTemplateId": ref("MasterLaunchTemplate"),
                    "Version": get_att("MasterLaunchTemplate", "LatestVersionNumber"),
                },
                "BlockDeviceMappings": [
                    {
                        "DeviceName": "/dev/xvda",
                        "Ebs": {
                            "VolumeSize": 50,
                            "VolumeType": "gp3",
                            "Encrypted": True,
                            "DeleteOnTermination": True,
                        },
                    }
                ],
                "PropagateTagsToVolumeOnCreation": True,
                "UserData": {
                    "Fn::Base64": {
                        "Fn::Sub": [user_data_text(), SUB_VARIABLES],
                    }
                },
                "Tags": tags("master"),
            },
        },
        # AWS::EC2::Instance has no MetadataOptions of its own: IMDSv2 comes from a template.
        "MasterLaunchTemplate": {
            "Type": "AWS::EC2::LaunchTemplate",
            "Properties": {
                "LaunchTemplateData": {
                    "MetadataOptions": {
                        "HttpTokens": "required",
                        "HttpEndpoint": "enabled",
                        "HttpPutResponseHopLimit": 1,
                    },
                },
                "TagSpecifications": [{"ResourceType": "launch-template", "Tags": tags("master")}],
            },
        },
        "MasterAddress": {
            "Type": "AWS::EC2::EIP",
            "Properties": {
                "Domain": "vpc",
                "InstanceId": ref("Master"),
                "Tags": tags("master"),
            },
        },
    }
