"""Security groups: master, agents, database (Determined's rules, the CIDR a parameter)."""

from __future__ import annotations

from cli.deploy.aws.options import MASTER_PORT
from cli.deploy.aws.template.intrinsics import VPC_ID, Json, checkov_skips, get_att, ref, tags

SSH_FROM_CIDR = checkov_skips(
    (
        "CKV_AWS_24",
        "SSH is open to the InboundCidr parameter only; its default 0.0.0.0/0 is Determined's, "
        "and the docs say to narrow it with --inbound-cidr",
    )
)
ALL_OUT = [{"IpProtocol": "-1", "CidrIp": "0.0.0.0/0", "Description": "all outbound"}]


def _ingress(group: str, port_from: int, port_to: int, source: str, description: str) -> Json:
    return {
        "Type": "AWS::EC2::SecurityGroupIngress",
        "Properties": {
            "GroupId": get_att(group, "GroupId"),
            "IpProtocol": "tcp",
            "FromPort": port_from,
            "ToPort": port_to,
            "SourceSecurityGroupId": get_att(source, "GroupId"),
            "Description": description,
        },
    }


def security_resources() -> dict[str, Json]:
    cidr = ref("InboundCidr")
    return {
        "MasterSecurityGroup": {
            "Type": "AWS::EC2::SecurityGroup",
            "Metadata": SSH_FROM_CIDR,
            "Properties": {
                "GroupDescription": "Resolute master: API from the inbound CIDR, SSH",
                "VpcId": VPC_ID,
                "SecurityGroupIngress": [
                    {
                        "IpProtocol": "tcp",
                        "FromPort": MASTER_PORT,
                        "ToPort": MASTER_PORT,
                        "CidrIp": cidr,
                        "Description": "master API and web UI",
                    },
                    {
                        "IpProtocol": "tcp",
                        "FromPort": 22,
                        "ToPort": 22,
                        "CidrIp": cidr,
                        "Description": "SSH",
                    },
                ],
                "SecurityGroupEgress": ALL_OUT,
                "Tags": tags("master"),
            },
        },
        "AgentSecurityGroup": {
            "Type": "AWS::EC2::SecurityGroup",
            "Metadata": SSH_FROM_CIDR,
            "Properties": {
                "GroupDescription": "Resolute agents: from the master and each other, SSH",
                "VpcId": VPC_ID,
                "SecurityGroupIngress": [
                    {
                        "IpProtocol": "tcp",
                        "FromPort": 22,
                        "ToPort": 22,
                        "CidrIp": cidr,
                        "Description": "SSH",
                    }
                ],
                "SecurityGroupEgress": ALL_OUT,
                "Tags": tags("agents"),
            },
        },
        "DatabaseSecurityGroup": {
            "Type": "AWS::EC2::SecurityGroup",
            "Properties": {
                "GroupDescription": "Resolute database: PostgreSQL from the master only",
                "VpcId": VPC_ID,
                "SecurityGroupEgress": ALL_OUT,
                "Tags": tags("database"),
            },
        },
        # Separate resources: rules between groups inline would make the groups depend on each
        # other in a cycle.
        "MasterFromAgents": _ingress(
            "MasterSecurityGroup", MASTER_PORT, MASTER_PORT, "AgentSecurityGroup", "agents"
        ),
        "AgentsFromMaster": _ingress(
            "AgentSecurityGroup", 0, 65535, "MasterSecurityGroup", "master to agents"
        ),
        "AgentsFromAgents": _ingress(
            "AgentSecurityGroup", 0, 65535, "AgentSecurityGroup", "distributed training"
        ),
        "DatabaseFromMaster": _ingress(
            "DatabaseSecurityGroup", 5432, 5432, "MasterSecurityGroup", "master"
        ),
    }
