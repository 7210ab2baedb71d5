"""checkov over the rendered CloudFormation template: nothing fails, and every check skipped in
the template's Metadata is explained there and in docs/deploy-aws.md.

checkov runs from its own venv (.venv-checkov, made by scripts/setup.sh: its pins clash with
ours). Offline it knows no severities (they come from Prisma Cloud's API), so every finding is
treated as one to fix or explain.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from cli.deploy.aws.template.build import build_template
from tests.cli.deploy.aws.conftest import ROOT

CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
RENDERED = ROOT / "cli/deploy/aws/rendered/resolute.json"
DOC = ROOT / "docs/deploy-aws.md"


@pytest.mark.slow
@pytest.mark.skipif(not CHECKOV.exists(), reason="no .venv-checkov: run scripts/setup.sh")
def test_checkov_finds_nothing_unexplained() -> None:
    # Run from the template's folder, on its bare name: checkov's CKV_AWS_46 (secrets in EC2
    # user data) reports the Master's user data, which holds no secret, when the file is given
    # by some absolute paths (a checkout at /tmp/ci did it, /work/main and /tmp/xx/ci did not),
    # so the verdict must not depend on where the repository is checked out.
    done = subprocess.run(
        [str(CHECKOV), "-f", RENDERED.name, "--framework", "cloudformation",
         "--skip-download", "--compact", "-o", "json"],
        capture_output=True, text=True, timeout=600, check=False, cwd=RENDERED.parent,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["summary"]["parsing_errors"] == 0
    assert report["summary"]["passed"] > 0
    failed = [(c["check_id"], c["resource"]) for c in report["results"]["failed_checks"]]
    # The whole record on failure: what checkov matched is what tells why.
    assert failed == [], json.dumps(report["results"]["failed_checks"], indent=1)[:20_000]
    skipped = {c["check_id"] for c in report["results"]["skipped_checks"]}
    documented = set(re.findall(r"`(CKV2?_AWS_\d+)`", DOC.read_text()))
    assert skipped, "the template's skips were not seen"
    assert skipped <= documented, f"explain these in {DOC.name}: {skipped - documented}"


def test_every_skip_in_the_template_gives_a_reason() -> None:
    skips = [
        skip
        for resource in build_template()["Resources"].values()
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    ]
    assert skips
    for skip in skips:
        assert re.fullmatch(r"CKV2?_AWS_\d+", skip["id"]) and len(skip["comment"]) >= 40, skip
