"""Every module of the master imports on its own, whatever was imported before it.

A ring of imports among the services (the scheduling package importing the task types, which
imported it back) used to make seven modules fail when imported first, e.g. in a test or a
script: `import controlplane.services.scheduling.pools` raised ImportError on a partially
initialised module. pyproject.toml's `acyclic_siblings` contract keeps the ring from coming
back; this checks what it is for.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # about 40 s: each module imported afresh

REPO = Path(__file__).resolve().parents[2]

# One interpreter for all modules: third-party imports are paid once, and before each module
# every controlplane module is forgotten, so each is imported as if first.
SCRIPT = """
import importlib, sys, warnings
warnings.simplefilter("ignore")
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "controlplane" or m.startswith("controlplane.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print("\\n".join(failed))
"""


def _modules() -> list[str]:
    names = []
    for path in sorted((REPO / "controlplane").rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        if "migrations" in parts:
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_every_master_module_imports_first() -> None:
    modules = _modules()
    assert "controlplane.services.scheduling.pools" in modules
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, *modules],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == ""
