"""A reset moto server (tests/support/moto_server.py) with what `det deploy aws up` expects of a
real account: a key pair and the public SSM parameters naming AMIs; and a way to run the real
`det` as a subprocess against it."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.moto_server import REGION, MotoEc2, fresh_moto

ROOT = Path(__file__).resolve().parents[4]
AMI_PARAMETER = "/aws/service/debian/release/12/latest/amd64"
CLUSTER = "det-test"


@dataclass
class DeployWorld:
    moto: MotoEc2
    home: Path
    calls: Path
    env: dict[str, str] = field(default_factory=dict)
    all_calls: set[str] = field(default_factory=set)

    def det(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """The real `det`, in a fresh process, in an empty directory."""
        self.calls.write_text("")
        done = subprocess.run(
            [sys.executable, "-m", "cli.main", "deploy", "aws", *args],
            cwd=self.home,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        self.recorded_calls()
        if check:
            assert done.returncode == 0, done.stdout + done.stderr
        return done

    def recorded_calls(self) -> list[str]:
        """The calls of the last `det` run; every run's also go into all_calls."""
        calls = [line for line in self.calls.read_text().splitlines() if line]
        self.all_calls.update(calls)
        return calls

    def up_args(self, *extra: str) -> list[str]:
        return [
            "up", "--cluster-id", CLUSTER, "--keypair", "det-key", "--region", REGION,
            "--ami-parameter", AMI_PARAMETER, "--agent-ami-parameter", AMI_PARAMETER,
            "--compute-agent-instance-type", "g4dn.xlarge", *extra,
        ]  # fmt: skip


def plant_public_parameter(name: str, value: str) -> None:
    """Backdoor: AWS publishes /aws/service/... parameters in every region; moto refuses to
    store names under /aws through its API, so the test puts it into moto's SSM backend."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ssm.models import Parameter, ssm_backends

    parameter = Parameter(
        account_id=DEFAULT_ACCOUNT_ID,
        name=name,
        value=value,
        parameter_type="String",
        description=None,
        allowed_pattern=None,
        keyid=None,
        last_modified_date=datetime.now(UTC),
        version=1,
        data_type="aws:ec2:image",
    )
    ssm_backends[DEFAULT_ACCOUNT_ID][REGION]._parameters[name].append(parameter)


def prepare_account(moto: MotoEc2) -> None:
    moto.client().create_key_pair(KeyName="det-key")
    plant_public_parameter(AMI_PARAMETER, moto.image_id)


def _delete_route_table(self: Any, account_id: str, region_name: str) -> None:
    self._associations.clear()
    self.ec2_backend.delete_route_table(self.id)


def fix_moto_gaps(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto 5.2 cannot delete a stack's AWS::EC2::RouteTable, so the VPC after it fails with
    DependencyViolation (AWS has no such gap). Its server runs in this process: give its
    RouteTable the delete that stack deletion calls."""
    from moto.ec2.models.route_tables import RouteTable

    monkeypatch.setattr(RouteTable, "delete", _delete_route_table, raising=False)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> DeployWorld:
    moto = fresh_moto(monkeypatch)
    fix_moto_gaps(monkeypatch)
    prepare_account(moto)
    home = tmp_path / "empty"
    home.mkdir()
    calls = tmp_path / "calls.log"
    env: dict[str, Any] = dict(os.environ)
    env.update(
        PYTHONPATH=str(ROOT),
        RESOLUTE_AWS_CALL_LOG=str(calls),
        HOME=str(tmp_path / "home"),
        COLUMNS="200",
    )
    return DeployWorld(moto=moto, home=home, calls=calls, env=env)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real wheel of this tree, built once (what `up` builds when given no --wheel)."""
    from cli.deploy.aws.wheel import build_wheel

    return build_wheel(tmp_path_factory.mktemp("wheel"))


def deployed_user_data(world: DeployWorld, cluster: str) -> str:
    """The master's user-data as CloudFormation would render it from the stack's current
    template and parameters (moto does not re-render it on an update)."""
    cfn = world.moto.client("cloudformation")
    stack = cfn.describe_stacks(StackName=cluster)["Stacks"][0]
    body = cfn.get_template(StackName=cluster)["TemplateBody"]
    template = body if isinstance(body, dict) else json.loads(body)
    text, _ = template["Resources"]["Master"]["Properties"]["UserData"]["Fn::Base64"]["Fn::Sub"]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    values = {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]}
    values.update(
        {
            "AWS::StackName": cluster,
            "AWS::Region": world.moto.region,
            "CheckpointBucket": outputs["CheckpointBucket"],
            "AgentSecurityGroupId": outputs["AgentSecurityGroupId"],
            "AgentInstanceProfileArn": outputs["AgentInstanceProfileArn"],
            "AgentSubnet": "subnet-from-the-stack",
            "DbHost": outputs["DatabaseEndpoint"],
            "DbPort": "5432",
        }
    )
    return re.sub(r"\$\{([^}!]+)\}", lambda m: values[m.group(1)], text)


def stack_of(world: DeployWorld) -> dict:
    return world.moto.client("cloudformation").describe_stacks(StackName=CLUSTER)["Stacks"][0]


def params_of(stack: dict) -> dict[str, str]:
    return {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]}


def outputs_of(stack: dict) -> dict[str, str]:
    return {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}


def secrets_of(world: DeployWorld) -> list[str]:
    ssm = world.moto.client("ssm")
    names = [f"/resolute/{CLUSTER}/db-password", f"/resolute/{CLUSTER}/admin-password"]
    return [ssm.get_parameter(Name=n, WithDecryption=True)["Parameter"]["Value"] for n in names]


def master_user_data(world: DeployWorld, instance_id: str) -> str:
    text = world.moto.user_data(instance_id)
    # moto keeps what CloudFormation's Fn::Base64 made, and describe encodes it once more.
    if not text.startswith("Content-Type"):
        text = base64.b64decode(text).decode()
    return text


def facts_in(user_data: str) -> dict:
    block = user_data.split("<<'FACTS'\n", 1)[1].split("\nFACTS\n", 1)[0]
    return json.loads(block)


POLICY = ROOT / "docs/deploy-aws-policy.json"
# Where an S3 operation's IAM action has another name (the service authorization reference).
S3_ACTIONS = {
    "HeadObject": "GetObject",
    "ListObjectVersions": "ListBucketVersions",
    "ListObjectsV2": "ListBucket",
    "DeleteObjects": "DeleteObject",
    "ListBuckets": "ListAllMyBuckets",
    "CreateMultipartUpload": "PutObject",
    "UploadPart": "PutObject",
    "CompleteMultipartUpload": "PutObject",
}


def iam_action(call: str) -> str:
    """'s3 ListBuckets' (what the CLI's call hook records) -> 's3:ListAllMyBuckets'."""
    service, operation = call.split()
    if service == "s3":
        operation = S3_ACTIONS.get(operation, operation)
    return f"{service}:{operation}"


def allowed_actions() -> list[str]:
    statements = json.loads(POLICY.read_text())["Statement"]
    actions: list[str] = []
    for statement in statements:
        assert statement["Effect"] == "Allow"
        value = statement["Action"]
        actions += value if isinstance(value, list) else [value]
    return actions


def not_allowed(actions: set[str]) -> set[str]:
    """The actions no statement of docs/deploy-aws-policy.json allows (wildcards understood)."""
    from fnmatch import fnmatchcase

    patterns = allowed_actions()
    return {a for a in actions if not any(fnmatchcase(a, p) for p in patterns)}
