"""A new VPC with two public subnets in two zones, made only when no --vpc-id is given."""

from __future__ import annotations

from cli.deploy.aws.template.intrinsics import Json, ref, tags

VPC_CIDR = "10.42.0.0/16"
SUBNET_CIDRS = ("10.42.0.0/20", "10.42.16.0/20")


def _subnet(zone_index: int, cidr: str, name: str) -> Json:
    return {
        "Type": "AWS::EC2::Subnet",
        "Condition": "CreateVpc",
        "Properties": {
            "VpcId": ref("Vpc"),
            "CidrBlock": cidr,
            "AvailabilityZone": {"Fn::Select": [zone_index, {"Fn::GetAZs": ""}]},
            # Dynamic agents dial out to the master and to S3 without a NAT gateway ($32/month
            # each); their security group admits nothing from outside but SSH from the CIDR.
            "MapPublicIpOnLaunch": True,
            "Tags": tags(name),
        },
    }


def network_resources() -> dict[str, Json]:
    return {
        "Vpc": {
            "Type": "AWS::EC2::VPC",
            "Condition": "CreateVpc",
            "Properties": {
                "CidrBlock": VPC_CIDR,
                "EnableDnsSupport": True,
                "EnableDnsHostnames": True,
                "Tags": tags("vpc"),
            },
        },
        "InternetGateway": {
            "Type": "AWS::EC2::InternetGateway",
            "Condition": "CreateVpc",
            "Properties": {"Tags": tags("igw")},
        },
        "GatewayAttachment": {
            "Type": "AWS::EC2::VPCGatewayAttachment",
            "Condition": "CreateVpc",
            "Properties": {"VpcId": ref("Vpc"), "InternetGatewayId": ref("InternetGateway")},
        },
        "SubnetA": _subnet(0, SUBNET_CIDRS[0], "subnet-a"),
        "SubnetB": _subnet(1, SUBNET_CIDRS[1], "subnet-b"),
        "RouteTable": {
            "Type": "AWS::EC2::RouteTable",
            "Condition": "CreateVpc",
            "Properties": {"VpcId": ref("Vpc"), "Tags": tags("routes")},
        },
        "DefaultRoute": {
            "Type": "AWS::EC2::Route",
            "Condition": "CreateVpc",
            "DependsOn": "GatewayAttachment",
            "Properties": {
                "RouteTableId": ref("RouteTable"),
                "DestinationCidrBlock": "0.0.0.0/0",
                "GatewayId": ref("InternetGateway"),
            },
        },
        "SubnetARoutes": {
            "Type": "AWS::EC2::SubnetRouteTableAssociation",
            "Condition": "CreateVpc",
            "Properties": {"SubnetId": ref("SubnetA"), "RouteTableId": ref("RouteTable")},
        },
        "SubnetBRoutes": {
            "Type": "AWS::EC2::SubnetRouteTableAssociation",
            "Condition": "CreateVpc",
            "Properties": {"SubnetId": ref("SubnetB"), "RouteTableId": ref("RouteTable")},
        },
    }
