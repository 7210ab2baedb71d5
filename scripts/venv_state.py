"""Whether a virtualenv already holds what scripts/setup.sh would install, so that setup can skip
pip (which, even with nothing to do, builds the editable project in a fresh build environment:
tens of seconds).

Run with the virtualenv's own Python, from anywhere:

    .venv/bin/python scripts/venv_state.py check torch        # exit 0: nothing to install
    .venv/bin/python scripts/venv_state.py stamp dev,torch    # after a successful install

`check` reads pyproject.toml's dependencies and the named extras and walks them with their own
requirements (and the extras those name), as pip would resolve them, against what is installed:
every one present in a matching version, and Resolute itself installed in editable mode from this
checkout. The stamp (.venv/resolute-setup.json) records pyproject.toml's digest at the last
install: when the file changed since (new entry points, packages), the project is installed again
even if every requirement is met. A virtualenv made before the stamp existed is judged by its
packages alone.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # a bare venv: pip vendors it
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "resolute"
STAMP = "resolute-setup.json"


def pyproject_digest(root: Path = ROOT) -> str:
    return hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()


def wanted(root: Path, extras: Iterable[str]) -> list[Requirement]:
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project.get("dependencies", [])]
    optional = project.get("optional-dependencies", {})
    for extra in extras:
        if extra not in optional:
            raise SystemExit(f"pyproject.toml has no extra {extra!r}")
        reqs += [Requirement(r) for r in optional[extra]]
    return reqs


def missing(reqs: Iterable[Requirement]) -> list[str]:
    """What is absent or in a version the requirements exclude, transitively (empty: none)."""
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    todo = [(r, "") for r in reqs]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{req} is not installed")
            continue
        if req.specifier and not req.specifier.contains(dist.version, prereleases=True):
            problems.append(f"{req} is wanted, {dist.version} is installed")
            continue
        for wanted_extra in ("", *sorted(req.extras)):
            if (name, wanted_extra) in seen:
                continue
            seen.add((name, wanted_extra))
            todo += [(Requirement(r), wanted_extra) for r in dist.requires or []]
    return problems


def _editable_from(dist: metadata.Distribution, root: Path) -> bool:
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    editable = (direct.get("dir_info") or {}).get("editable", False)
    return bool(editable) and direct.get("url") == root.as_uri()


def project_problems(root: Path, venv: Path) -> list[str]:
    # Every copy of its metadata on the path: the checkout's own resolute.egg-info (left by
    # setuptools) may come first where the checkout is on sys.path.
    found = list(metadata.distributions(name=PROJECT))
    if not found:
        return [f"{PROJECT} is not installed"]
    if not any(_editable_from(dist, root) for dist in found):
        return [f"{PROJECT} is not installed in editable mode from {root}"]
    try:
        stamped = json.loads((venv / STAMP).read_text()).get("pyproject")
    except (OSError, ValueError):
        return []  # made before the stamp existed: its packages decide
    if stamped != pyproject_digest(root):
        return ["pyproject.toml changed since the last install"]
    return []


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("check", "stamp"):
        print(__doc__, file=sys.stderr)
        return 2
    extras = [e for e in argv[1].split(",") if e]
    venv = Path(sys.prefix)
    if argv[0] == "stamp":
        (venv / STAMP).write_text(json.dumps({"pyproject": pyproject_digest()}) + "\n")
        return 0
    problems = project_problems(ROOT, venv) + missing(wanted(ROOT, extras))
    for problem in problems[:5]:
        print(f"  {problem}")
    if len(problems) > 5:
        print(f"  … and {len(problems) - 5} more")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
