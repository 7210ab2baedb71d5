"""`up`: create or update the cluster's stack in place; `--dry-run` reads and compares only.

The dry run makes no mutating call at all: it reads the stack (describe_stacks, get_template)
and compares the template and parameters locally, instead of creating a change set (which is a
write, and which Determined's users saw left behind). What a change set would add, the per
resource replace/no-replace verdict, is what CloudFormation decides; the diff shows exactly what
`up` would send.
"""

from __future__ import annotations

import difflib
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cli.deploy.aws.clients import Aws, ClientError
from cli.deploy.aws.events import wait_for_stack
from cli.deploy.aws.master_config import PLACEHOLDERS, ClusterFacts, render_master_config
from cli.deploy.aws.options import DeployOptions, admin_password_parameter
from cli.deploy.aws.secrets import ensure_secrets, put_tls
from cli.deploy.aws.template.build import build_template, compact, render
from cli.deploy.aws.wheel import resolute_version, wheel_for_upload, wheel_key
from cli.deploy.master_tls import MasterTls
from cli.errors import CliError

BUSY = "_IN_PROGRESS"
CAPABILITIES = ["CAPABILITY_IAM"]


def describe_stack(cfn: Any, name: str) -> dict[str, Any] | None:
    """The stack, or None when there is none (or only a deleted one) by that name."""
    try:
        stacks = cfn.describe_stacks(StackName=name)["Stacks"]
    except ClientError as exc:
        if "does not exist" in str(exc):
            return None
        raise
    live = [s for s in stacks if s["StackStatus"] != "DELETE_COMPLETE"]
    return live[0] if live else None


def outputs_of(stack: dict[str, Any]) -> dict[str, str]:
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def parameters_of(stack: dict[str, Any]) -> dict[str, str]:
    return {p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])}


def facts_for(options: DeployOptions, key: str, outputs: dict[str, str]) -> ClusterFacts:
    """The master's facts as far as they are known before boot (ids from the outputs of an
    existing stack, placeholders for a new one)."""
    return replace(
        PLACEHOLDERS,
        cluster_id=options.cluster_id,
        region=options.region,
        bucket=outputs.get("CheckpointBucket", PLACEHOLDERS.bucket),
        wheel_key=key,
        agent_security_group=outputs.get("AgentSecurityGroupId", PLACEHOLDERS.agent_security_group),
        agent_instance_profile_arn=outputs.get(
            "AgentInstanceProfileArn", PLACEHOLDERS.agent_instance_profile_arn
        ),
        subnet_id=options.subnet_ids[0] if options.subnet_ids else PLACEHOLDERS.subnet_id,
        key_name=options.keypair,
        agent_image_id=f"<resolved from {options.agent_ami_parameter}>",
        aux_instance_type=options.aux_agent_instance_type,
        compute_instance_type=options.compute_agent_instance_type,
        max_dynamic_agents=options.max_dynamic_agents,
        max_aux_containers_per_agent=options.max_aux_containers_per_agent,
        spot=options.spot,
        spot_max_price=options.spot_max_price,
        max_idle_agent_period=options.max_idle_agent_period,
        max_agent_starting_period=options.max_agent_starting_period,
        scheduler_type=options.scheduler_type,
        preemption_enabled=options.preemption_enabled,
        master_tls=options.master_tls,
        master_cert_name=options.master_cert_name,
    )


@dataclass(frozen=True)
class DryRun:
    exists: bool
    template_diff: list[str]
    parameter_changes: list[tuple[str, str | None, str]]
    master_config: dict[str, Any]


def dry_run(aws: Aws, options: DeployOptions) -> DryRun:
    """Read-only: describe_stacks and get_template, nothing else."""
    cfn = aws.client("cloudformation")
    stack = describe_stack(cfn, options.cluster_id)
    new_template = build_template()
    if stack is None:
        old_text, old_params, outputs = "", {}, {}
        key = "wheels/<sha256 of the wheel up builds>/resolute-<version>.whl"
    else:
        body = cfn.get_template(StackName=stack["StackId"])["TemplateBody"]
        old = body if isinstance(body, dict) else json.loads(body)
        old_text, old_params, outputs = render(old), parameters_of(stack), outputs_of(stack)
        key = old_params.get("WheelKey", "")
    new_params = options.parameters(key, resolute_version())
    diff = list(
        difflib.unified_diff(
            old_text.splitlines(),
            render(new_template).splitlines(),
            "deployed" if stack else "(no stack)",
            "up would send",
            lineterm="",
        )
    )
    changes = [
        (name, old_params.get(name) if stack else None, value)
        for name, value in new_params.items()
        if stack is None or old_params.get(name) != value
    ]
    master = render_master_config(facts_for(options, key, outputs))
    return DryRun(stack is not None, diff, changes, master)


def _upload_wheel(s3: Any, bucket: str, wheel: Path, key: str) -> None:
    s3.upload_file(str(wheel), bucket, key)


def _bucket_when_made(cfn: Any, stack_id: str, sleep: Callable[[float], None]) -> str | None:
    """The bucket's name once CloudFormation has made it; None if the stack fails first."""
    while True:
        try:
            resource = cfn.describe_stack_resource(
                StackName=stack_id, LogicalResourceId="CheckpointBucket"
            )["StackResourceDetail"]
        except ClientError:
            resource = {}
        if resource.get("ResourceStatus") == "CREATE_COMPLETE":
            return str(resource["PhysicalResourceId"])
        status = cfn.describe_stacks(StackName=stack_id)["Stacks"][0]["StackStatus"]
        if not status.endswith(BUSY) or "ROLLBACK" in status:
            return None
        sleep(5.0)


@dataclass(frozen=True)
class UpResult:
    created: bool
    changed: bool
    outputs: dict[str, str]
    secrets_made: list[str]


def up(
    aws: Aws,
    options: DeployOptions,
    *,
    wheel: Path | None,
    new_password: Callable[[], str],
    say: Callable[[str], None],
    sleep: Callable[[float], None],
    db_password: str | None = None,
    admin_password: str | None = None,
    tls: MasterTls | None = None,
) -> UpResult:
    cfn = aws.client("cloudformation")
    stack = describe_stack(cfn, options.cluster_id)
    if stack is not None and stack["StackStatus"].endswith(BUSY):
        raise CliError(
            f"stack {options.cluster_id} is busy ({stack['StackStatus']}); run up again when "
            "it settles (det deploy aws status shows it)"
        )
    if stack is not None and stack["StackStatus"] in ("ROLLBACK_COMPLETE", "ROLLBACK_FAILED"):
        raise CliError(
            f"stack {options.cluster_id} failed to create earlier and cannot be updated; "
            f"remove it with `det deploy aws down --cluster-id {options.cluster_id}`, then run up"
        )
    made = ensure_secrets(
        aws.client("ssm"),
        options.cluster_id,
        new_password=new_password,
        db_password=db_password,
        admin_password=admin_password,
    )
    for name in made:
        say(f"Stored a new password in SSM (SecureString): {name}")
    if tls is not None:
        for name in put_tls(aws.client("ssm"), options.cluster_id, tls):
            say(f"Stored the master's TLS certificate/key in SSM (SecureString): {name}")
    work = tempfile.TemporaryDirectory(prefix="resolute-wheel-")
    try:
        built = wheel_for_upload(wheel, work)
        key = wheel_key(built)
        say(f"Wheel: {built.name} -> {key}")
        template = build_template()
        params = options.parameters(key, resolute_version())
        sent = [{"ParameterKey": k, "ParameterValue": v} for k, v in params.items()]
        total = len(template["Resources"]) + 1
        s3 = aws.client("s3")
        if stack is None:
            stack_id = cfn.create_stack(
                StackName=options.cluster_id,
                TemplateBody=compact(template),
                Parameters=sent,
                Capabilities=CAPABILITIES,
                Tags=options.stack_tags(),
                OnFailure="ROLLBACK",
            )["StackId"]
            say(f"Creating stack {options.cluster_id} ({total} resources)")
            bucket = _bucket_when_made(cfn, stack_id, sleep)
            if bucket is not None:
                _upload_wheel(s3, bucket, built, key)
            wait_for_stack(cfn, stack_id, options.cluster_id, total=total, say=say, sleep=sleep)
            created, changed = True, True
        else:
            stack_id = stack["StackId"]
            _upload_wheel(s3, outputs_of(stack)["CheckpointBucket"], built, key)
            seen = {
                e["EventId"] for e in cfn.describe_stack_events(StackName=stack_id)["StackEvents"]
            }
            try:
                cfn.update_stack(
                    StackName=stack_id,
                    TemplateBody=compact(template),
                    Parameters=sent,
                    Capabilities=CAPABILITIES,
                    Tags=options.stack_tags(),
                )
            except ClientError as exc:
                if "No updates are to be performed" not in str(exc):
                    raise
                changed = False
            else:
                say(f"Updating stack {options.cluster_id} in place")
                wait_for_stack(
                    cfn, stack_id, options.cluster_id, total=total, say=say, sleep=sleep, seen=seen
                )
                changed = True
            created = False
    finally:
        work.cleanup()
    final = cfn.describe_stacks(StackName=stack_id)["Stacks"][0]
    return UpResult(created, changed, outputs_of(final), made)


def admin_login(cluster_id: str, region: str) -> str:
    parameter = admin_password_parameter(cluster_id)
    return (
        f"admin; password: aws ssm get-parameter --region {region} --with-decryption "
        f"--name {parameter} --query Parameter.Value --output text"
    )
