"""The wheel `up` uploads must be this very Resolute version."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.deploy.gcp import DeployError, resolute_version, resolve_wheel


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
