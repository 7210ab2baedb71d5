"""The CloudFormation template: the checked-in rendering, cfn-lint, and the properties the
issue asks for (pinned encrypted database kept as a snapshot, IMDSv2, AMIs from SSM, secrets only
as dynamic references, IAM scoped to the cluster)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.deploy.aws.options import CLUSTER_TAG, DeployOptions
from cli.deploy.aws.template.build import build_template, compact, render
from cli.deploy.aws.template.master import BOOT_SCRIPT, SUB_VARIABLES

RENDERED = Path(__file__).resolve().parents[4] / "cli/deploy/aws/rendered/resolute.json"
TEMPLATE = build_template()
RESOURCES: dict[str, Any] = TEMPLATE["Resources"]


def test_rendered_copy_is_the_generated_template() -> None:
    assert RENDERED.read_text() == render(TEMPLATE), (
        "regenerate: python -c 'from cli.deploy.aws.template.build import *; "
        'print(render(build_template()), end="")\' > cli/deploy/aws/rendered/resolute.json'
    )


def test_what_is_sent_fits_cloudformations_body_limit() -> None:
    assert len(compact(TEMPLATE).encode()) < 51_200
    assert json.loads(compact(TEMPLATE)) == TEMPLATE


def test_cfn_lint_finds_no_error() -> None:
    lint = shutil.which("cfn-lint", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.skip("cfn-lint is not installed (pip install -e .[dev])")
    done = subprocess.run(
        [lint, "--format", "parseable", str(RENDERED)], capture_output=True, text=True, check=False
    )
    errors = [line for line in done.stdout.splitlines() if ":E" in line]
    assert errors == [], done.stdout
    # cfn-lint exits 0 (clean), 4 (warnings) or 8 (informational) when there is no error
    assert done.returncode in (0, 4, 8), done.stdout + done.stderr


def test_database_is_pinned_encrypted_and_snapshotted() -> None:
    database = RESOURCES["Database"]
    assert database["DeletionPolicy"] == "Snapshot"
    assert database["UpdateReplacePolicy"] == "Snapshot"
    props = database["Properties"]
    assert props["Engine"] == "postgres"
    assert re.fullmatch(r"\d+\.\d+", props["EngineVersion"])
    assert props["AutoMinorVersionUpgrade"] is False
    assert props["StorageEncrypted"] is True and props["PubliclyAccessible"] is False
    assert props["CopyTagsToSnapshot"] is True
    assert props["MasterUserPassword"] == {
        "Fn::Sub": "{{resolve:ssm-secure:/resolute/${AWS::StackName}/db-password}}"
    }


def test_bucket_is_private_encrypted_and_kept() -> None:
    bucket = RESOURCES["CheckpointBucket"]
    assert bucket["DeletionPolicy"] == "Retain"
    props = bucket["Properties"]
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"]


def test_master_uses_imdsv2_and_an_ami_from_ssm() -> None:
    launch = RESOURCES["MasterLaunchTemplate"]["Properties"]["LaunchTemplateData"]
    assert launch["MetadataOptions"]["HttpTokens"] == "required"
    master = RESOURCES["Master"]["Properties"]
    assert master["LaunchTemplate"]["LaunchTemplateId"] == {"Ref": "MasterLaunchTemplate"}
    assert master["ImageId"] == {"Ref": "MasterImageId"}
    for name in ("MasterImageId", "AgentImageId"):
        parameter = TEMPLATE["Parameters"][name]
        assert parameter["Type"] == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"
        assert parameter["Default"].startswith("/aws/service/debian/")


def test_no_parameter_carries_a_secret() -> None:
    names = list(TEMPLATE["Parameters"])
    assert [n for n in names if re.search("pass|secret|token", n, re.I)] == []
    sent = DeployOptions(cluster_id="c1", keypair="k").parameters("wheels/x/r.whl", "1.0")
    assert set(sent) == set(names)


def test_every_substitution_in_the_boot_script_is_known() -> None:
    """The script is an Fn::Sub text: every dollar-brace name must be something CloudFormation
    fills in, or the stack fails (or, worse, a shell variable is silently replaced)."""
    known = set(TEMPLATE["Parameters"]) | set(SUB_VARIABLES) | set(RESOURCES)
    known |= {"AWS::Region", "AWS::StackName"}
    used = set(re.findall(r"\$\{([^}]*)\}", BOOT_SCRIPT.read_text()))
    assert used, "the boot script substitutes nothing"
    assert used <= known, used - known


def test_master_may_stop_only_what_carries_its_cluster_tag() -> None:
    statements = RESOURCES["MasterRole"]["Properties"]["Policies"][0]["PolicyDocument"]
    by_sid = {s.get("Sid"): s for s in statements["Statement"]}
    stop = by_sid["StopOnlyThisClustersAgents"]
    assert set(stop["Action"]) == {"ec2:TerminateInstances", "ec2:CancelSpotInstanceRequests"}
    assert stop["Condition"] == {
        "StringEquals": {f"aws:ResourceTag/{CLUSTER_TAG}": {"Ref": "AWS::StackName"}}
    }
    launch = by_sid["LaunchOnlyTaggedWithThisCluster"]
    assert launch["Condition"]["StringEquals"] == {
        f"aws:RequestTag/{CLUSTER_TAG}": {"Ref": "AWS::StackName"}
    }
    for statement in statements["Statement"]:
        if any(str(a).startswith("s3:") for a in _list(statement["Action"])):
            assert "CheckpointBucket" in json.dumps(statement["Resource"])


def test_every_resource_that_takes_tags_carries_the_cluster_tag() -> None:
    for name, resource in RESOURCES.items():
        tags = resource.get("Properties", {}).get("Tags")
        if tags is None:
            continue
        assert {"Key": CLUSTER_TAG, "Value": {"Ref": "AWS::StackName"}} in tags, name


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
