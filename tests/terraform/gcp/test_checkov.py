"""checkov over terraform/gcp: no finding fails, and every check we skip is explained.

checkov runs from its own venv (.venv-checkov, made by scripts/setup.sh: its pins clash with
ours). Offline it knows no severities (they come from Prisma Cloud's API), so every finding is
treated as one that must be fixed or explained: explained in place with a `#checkov:skip`
comment and again in docs/deploy-gcp.md.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from cli.deploy.gcp_template import TERRAFORM_DIR

REPO = TERRAFORM_DIR.parents[1]
CHECKOV = REPO / ".venv-checkov" / "bin" / "checkov"
DOC = REPO / "docs" / "deploy-gcp.md"
# No guideline download (it asks Prisma Cloud's API); a JSON report on stdout.
OFFLINE_JSON = ("--skip-download", "--quiet", "--compact", "-o", "json")


@pytest.mark.slow
@pytest.mark.skipif(not CHECKOV.exists(), reason="no .venv-checkov: run scripts/setup.sh")
def test_checkov_finds_nothing_unexplained() -> None:
    done = subprocess.run(
        [str(CHECKOV), "-d", str(TERRAFORM_DIR), "--framework", "terraform", *OFFLINE_JSON],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(done.stdout)
    summary = report["summary"]
    assert summary["parsing_errors"] == 0
    failed = [(c["check_id"], c["resource"]) for c in report["results"]["failed_checks"]]
    assert failed == []
    skipped = {c["check_id"] for c in report["results"].get("skipped_checks", [])}
    documented = set(re.findall(r"`(CKV2?_GCP_\d+)`", DOC.read_text()))
    assert skipped <= documented, f"explain these in {DOC.name}: {skipped - documented}"


def test_every_skip_in_the_modules_gives_a_reason() -> None:
    skips = [
        line.strip()
        for path in sorted(TERRAFORM_DIR.rglob("*.tf"))
        for line in Path(path).read_text().splitlines()
        if "checkov:skip" in line
    ]
    assert skips
    for line in skips:
        assert re.fullmatch(r"#checkov:skip=CKV2?_GCP_\d+:.{20,}", line), line
