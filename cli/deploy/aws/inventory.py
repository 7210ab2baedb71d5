"""Everything in a region still tagged with a cluster: the leak report of `down`, and `status`.

Per-service listings (not the Resource Groups Tagging API, which misses spot requests and
resources whose tags are still propagating). What `down` keeps on purpose unless
--delete-data (the bucket, the database's final snapshot, the passwords that snapshot needs) is
reported as kept, not as a leak.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cli.deploy.aws.clients import ClientError
from cli.deploy.aws.options import CLUSTER_TAG, secret_path

LIVE_INSTANCE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]
LIVE_SPOT_STATES = ["open", "active"]


@dataclass(frozen=True)
class Leftover:
    kind: str
    id: str
    detail: str = ""


def _tag_filter(cluster_id: str) -> list[dict[str, Any]]:
    return [{"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster_id]}]


def _tagged(tags: list[dict[str, str]] | None, cluster_id: str) -> bool:
    return any(t.get("Key") == CLUSTER_TAG and t.get("Value") == cluster_id for t in tags or [])


def instances(ec2: Any, cluster_id: str) -> list[dict[str, Any]]:
    filters = [
        *_tag_filter(cluster_id),
        {"Name": "instance-state-name", "Values": LIVE_INSTANCE_STATES},
    ]
    pages = ec2.get_paginator("describe_instances").paginate(Filters=filters)
    return [i for p in pages for r in p["Reservations"] for i in r["Instances"]]


def spot_requests(ec2: Any, cluster_id: str) -> list[dict[str, Any]]:
    filters = [*_tag_filter(cluster_id), {"Name": "state", "Values": LIVE_SPOT_STATES}]
    answer = ec2.describe_spot_instance_requests(Filters=filters)
    return list(answer["SpotInstanceRequests"])


def _ec2_leftovers(ec2: Any, cluster_id: str) -> list[Leftover]:
    found = [Leftover("ec2 instance", i["InstanceId"], i["State"]["Name"])
             for i in instances(ec2, cluster_id)]  # fmt: skip
    found += [Leftover("spot request", r["SpotInstanceRequestId"], r["State"])
              for r in spot_requests(ec2, cluster_id)]  # fmt: skip
    tagged = _tag_filter(cluster_id)
    listings = (
        ("ebs volume", ec2.describe_volumes, "Volumes", "VolumeId", "State"),
        ("network interface", ec2.describe_network_interfaces, "NetworkInterfaces",
         "NetworkInterfaceId", "Status"),
        ("security group", ec2.describe_security_groups, "SecurityGroups", "GroupId", "GroupName"),
        ("elastic ip", ec2.describe_addresses, "Addresses", "AllocationId", "PublicIp"),
    )  # fmt: skip
    for kind, describe, key, id_key, detail in listings:
        found += [Leftover(kind, str(x.get(id_key, "")), str(x.get(detail, "")))
                  for x in describe(Filters=tagged)[key]]  # fmt: skip
    found += [Leftover("vpc", v["VpcId"]) for v in ec2.describe_vpcs(Filters=tagged)["Vpcs"]]
    return found


def _buckets(s3: Any, cluster_id: str) -> list[Leftover]:
    found = []
    for bucket in s3.list_buckets().get("Buckets", []):
        try:
            tags = s3.get_bucket_tagging(Bucket=bucket["Name"])["TagSet"]
        except ClientError:
            continue  # untagged, or gone meanwhile
        if _tagged(tags, cluster_id):
            found.append(Leftover("s3 bucket", bucket["Name"]))
    return found


def _parameters(ssm: Any, cluster_id: str) -> list[Leftover]:
    prefix = {"Key": "Name", "Option": "BeginsWith", "Values": [secret_path(cluster_id) + "/"]}
    answer = ssm.describe_parameters(ParameterFilters=[prefix])
    return [Leftover("ssm parameter", p["Name"], p.get("Type", "")) for p in answer["Parameters"]]


def database_snapshots(rds: Any, cluster_id: str) -> list[str]:
    """Manual snapshots carrying the cluster tag (the final one, by CopyTagsToSnapshot)."""
    pages = rds.get_paginator("describe_db_snapshots").paginate(SnapshotType="manual")
    return [s["DBSnapshotIdentifier"] for p in pages for s in p["DBSnapshots"]
            if _tagged(s.get("TagList"), cluster_id)]  # fmt: skip


def _databases(rds: Any, cluster_id: str) -> tuple[list[Leftover], list[Leftover]]:
    dbs = [Leftover("rds instance", d["DBInstanceIdentifier"], d.get("DBInstanceStatus", ""))
           for d in rds.describe_db_instances()["DBInstances"]
           if _tagged(d.get("TagList"), cluster_id)]  # fmt: skip
    snaps = [Leftover("rds snapshot", s["DBSnapshotIdentifier"], s.get("Status", ""))
             for s in rds.describe_db_snapshots()["DBSnapshots"]
             if _tagged(s.get("TagList"), cluster_id)]  # fmt: skip
    return dbs, snaps


@dataclass(frozen=True)
class Report:
    leaks: list[Leftover]
    kept: list[Leftover]


def leak_report(aws: Any, cluster_id: str, *, keep_data: bool) -> Report:
    """What is left of the cluster; with keep_data, the bucket, snapshots and the passwords are
    kept on purpose."""
    leaks = _ec2_leftovers(aws.client("ec2"), cluster_id)
    databases, snapshots = _databases(aws.client("rds"), cluster_id)
    leaks += databases
    data = _buckets(aws.client("s3"), cluster_id) + _parameters(aws.client("ssm"), cluster_id)
    data += snapshots
    if keep_data:
        return Report(leaks, data)
    return Report(leaks + data, [])
