"""The wheel of this very CLI build, which the master and its agents install from the bucket."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from cli.errors import CliError

SOURCE_ROOT = Path(__file__).resolve().parents[3]


def resolute_version() -> str:
    try:
        return metadata.version("resolute")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def build_wheel(out_dir: Path, source: Path = SOURCE_ROOT) -> Path:
    """`pip wheel --no-deps` of the source tree this CLI runs from (editable installs and
    checkouts). No build isolation: the build tools already here are used, nothing is fetched."""
    if not (source / "pyproject.toml").is_file():
        raise CliError(
            f"no source tree at {source} to build the Resolute wheel from (an installed, "
            "non-editable package): pass the wheel you installed with --wheel"
        )
    command = [
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
        "--quiet", "-w", str(out_dir), str(source),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(out_dir.glob("resolute-*.whl"))
    if done.returncode != 0 or not wheels:
        raise CliError(f"building the Resolute wheel failed: {done.stderr.strip()[-2000:]}")
    return wheels[-1]


def wheel_key(wheel: Path) -> str:
    """Content-addressed: a rebuilt wheel of the same version still reaches the master."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()[:16]
    return f"wheels/{digest}/{wheel.name}"


def wheel_for_upload(given: Path | None, work: tempfile.TemporaryDirectory[str]) -> Path:
    if given is not None:
        if not given.is_file() or given.suffix != ".whl":
            raise CliError(f"--wheel {given}: not a .whl file")
        return given
    return build_wheel(Path(work.name))
