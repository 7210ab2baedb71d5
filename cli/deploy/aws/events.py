"""Stack events: what failed, AWS's reason, and a hint (pure), and waiting with progress."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cli.errors import CliError

HINTS: tuple[tuple[str, str], ...] = (
    (
        "AddressLimitExceeded",
        "the account is at its Elastic IP limit (5 per region by default): release unused "
        "addresses (aws ec2 describe-addresses) or ask for more in Service Quotas, then run up "
        "again",
    ),
    (
        "InstanceLimitExceeded",
        "the account's vCPU quota for this instance family is used up: ask for more in Service "
        "Quotas or pick a smaller --master-instance-type",
    ),
    (
        "VcpuLimitExceeded",
        "the account's vCPU quota is used up: ask for more in Service Quotas",
    ),
    (
        "InsufficientInstanceCapacity",
        "AWS has no capacity for this type in this zone now: retry later or pick another type",
    ),
    (
        "Unsupported",
        "the instance type is not offered in this zone: pick another --master-instance-type "
        "or pass --vpc-id/--subnet-ids in zones that offer it",
    ),
    (
        "ssm-secure",
        "CloudFormation could not read the cluster's SSM SecureString; check that "
        "/resolute/<cluster-id>/db-password exists in this region (up creates it)",
    ),
    (
        "not authorized",
        "the deploying identity lacks a permission: compare it with docs/deploy-aws-policy.json",
    ),
    (
        "AccessDenied",
        "the deploying identity lacks a permission: compare it with docs/deploy-aws-policy.json",
    ),
    (
        "VpcLimitExceeded",
        "the region is at its VPC limit (5): delete an unused VPC or deploy into an existing one "
        "with --vpc-id and --subnet-ids",
    ),
    (
        "DBInstanceClass",
        "this RDS instance class is not offered for PostgreSQL here: pick another "
        "--db-instance-type",
    ),
    (
        "KeyPair",
        "the key pair does not exist in this region: create or import it, or name another "
        "with --keypair",
    ),
)
CANCELLED = ("Resource creation cancelled", "Resource update cancelled")
FAILED_GOAL = ("ROLLBACK_COMPLETE", "ROLLBACK_FAILED", "CREATE_FAILED", "DELETE_FAILED",
               "UPDATE_ROLLBACK_COMPLETE", "UPDATE_ROLLBACK_FAILED", "UPDATE_FAILED",
               "IMPORT_ROLLBACK_COMPLETE")  # fmt: skip


@dataclass(frozen=True)
class Failure:
    resource: str
    resource_type: str
    status: str
    reason: str
    hint: str

    def message(self, stack: str) -> str:
        return (
            f"stack {stack}: {self.resource} ({self.resource_type}) {self.status}: "
            f"{self.reason}\nhint: {self.hint}"
        )


def hint_for(reason: str) -> str:
    for marker, hint in HINTS:
        if marker.lower() in reason.lower():
            return hint
    return (
        "read the reason above; `det deploy aws status` shows the stack, and "
        "`det deploy aws down` removes whatever was made"
    )


def first_failure(events: Sequence[Mapping[str, Any]], stack_name: str) -> Failure | None:
    """The earliest resource failure among `events` (AWS lists them newest first) that is not
    just a cancellation caused by another failure."""
    for event in reversed(events):
        status = str(event.get("ResourceStatus", ""))
        reason = str(event.get("ResourceStatusReason", ""))
        if not status.endswith("_FAILED") or event.get("LogicalResourceId") == stack_name:
            continue
        if any(reason.startswith(c) for c in CANCELLED):
            continue
        return Failure(
            resource=str(event["LogicalResourceId"]),
            resource_type=str(event.get("ResourceType", "")),
            status=status,
            reason=reason,
            hint=hint_for(reason),
        )
    return None


def is_settled(status: str) -> bool:
    return not status.endswith("_IN_PROGRESS")


def stack_events(cfn: Any, stack_id: str, seen: set[str]) -> list[dict[str, Any]]:
    """Events not seen before, oldest first (one page: new events are on the first)."""
    fresh = [e for e in cfn.describe_stack_events(StackName=stack_id)["StackEvents"]
             if e["EventId"] not in seen]  # fmt: skip
    seen.update(e["EventId"] for e in fresh)
    return list(reversed(fresh))


def wait_for_stack(
    cfn: Any,
    stack_id: str,
    stack_name: str,
    *,
    total: int,
    say: Callable[[str], None],
    sleep: Callable[[float], None],
    poll_s: float = 5.0,
    seen: set[str] | None = None,
) -> str:
    """Poll until the stack settles, printing each new resource event as `[done/total]`.
    Raises CliError with the failing resource, AWS's reason and a hint when it fails."""
    seen = set() if seen is None else seen
    done: set[str] = set()
    history: list[dict[str, Any]] = []
    while True:
        status = cfn.describe_stacks(StackName=stack_id)["Stacks"][0]["StackStatus"]
        for event in stack_events(cfn, stack_id, seen):
            history.insert(0, event)
            state = event.get("ResourceStatus", "")
            if state.endswith("_COMPLETE"):
                done.add(event["LogicalResourceId"])
            say(
                f"  [{min(len(done), total)}/{total}] {state:<20} {event['LogicalResourceId']}"
                f" ({event.get('ResourceType', '')})"
            )
        if is_settled(status):
            break
        sleep(poll_s)
    if status in FAILED_GOAL:
        failure = first_failure(history, stack_name)
        if failure is None:
            raise CliError(f"stack {stack_name} ended {status}\nhint: {hint_for('')}")
        raise CliError(failure.message(stack_name))
    return str(status)
