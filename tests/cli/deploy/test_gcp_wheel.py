"""The wheel `up` uploads must be this very Resolute version."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.deploy.gcp import DeployError, resolute_version, resolve_wheel
from cli.deploy.gcp_template import TERRAFORM_DIR


def test_the_given_wheel_of_this_version_is_used(tmp_path: Path) -> None:
    wheel = tmp_path / f"resolute-{resolute_version()}-py3-none-any.whl"
    wheel.write_bytes(b"PK")
    assert resolve_wheel(wheel, tmp_path) == wheel


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("resolute-99.0.0-py3-none-any.whl", "is Resolute 99.0.0, but this CLI is"),
        ("determined-0.38.1-py3-none-any.whl", "not a Resolute wheel"),
        ("resolute.tar.gz", "not a Resolute wheel"),
    ],
)
def test_another_version_or_another_file_is_refused(
    tmp_path: Path, name: str, message: str
) -> None:
    wheel = tmp_path / name
    wheel.write_bytes(b"PK")
    with pytest.raises(DeployError, match=message):
        resolve_wheel(wheel, tmp_path)


def test_a_missing_wheel_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DeployError, match="not a Resolute wheel file"):
        resolve_wheel(tmp_path / f"resolute-{resolute_version()}-py3-none-any.whl", tmp_path)


@pytest.mark.slow
def test_without_wheel_one_is_built_from_this_source_tree(tmp_path: Path) -> None:
    import zipfile

    wheel = resolve_wheel(None, tmp_path)
    assert wheel.name == f"resolute-{resolute_version()}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    assert "controlplane/__main__.py" in names and "provisioners/agent_setup.sh.tmpl" in names
    # every Terraform file of the checkout is in the wheel, at the same place relative to cli/
    checkout = {
        str(path.relative_to(TERRAFORM_DIR.parents[1]))
        for path in TERRAFORM_DIR.rglob("*")
        if path.is_file() and ".terraform" not in path.parts
    }
    assert checkout and checkout <= set(names), sorted(checkout - set(names))

    # installed (no source tree near it), the CLI finds the modules and their templates there
    target = tmp_path / "installed"
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target"]
    subprocess.run(
        [*install, str(target), str(wheel)],
        check=True,
        timeout=240,
    )
    probe = (
        "from cli.deploy.gcp_template import TERRAFORM_DIR, STARTUP_TEMPLATE as s;"
        "print(TERRAFORM_DIR); print((TERRAFORM_DIR / 'main.tf').is_file(), s.is_file())"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(target)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert found == [str(target / "terraform" / "gcp"), "True", "True"]
