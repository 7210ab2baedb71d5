"""Our public Core API against determined==0.38.1's, by ``inspect`` in both interpreters.

User code changes only its import line, so every public function and method Determined has must
exist here with the same parameters (names, kinds, defaults); enums must have the same members
and values. Extra parameters of ours with defaults (``session=``) are allowed after Determined's.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
DET_PYTHON = REPO / ".venv-det" / "bin" / "python"

DUMP = r"""
import enum, inspect, json, sys
root = sys.argv[1]
if root == "determined":
    import determined as det
    from determined import core
else:
    import harness as det
    from harness import core

CLASSES = ["Context", "TrainContext", "PreemptContext", "SearcherContext", "SearcherOperation",
           "CheckpointContext", "DistributedContext"]
ENUMS = ["PreemptMode", "SearcherMode", "TensorboardMode", "Unit", "DownloadMode",
         "EarlyExitReason"]

def default(v):
    if v is inspect.Parameter.empty:
        return None
    if isinstance(v, enum.Enum):
        return f"{type(v).__name__}.{v.name}"
    if callable(v):
        return "<callable>"
    return repr(v)

def sig(f):
    return [[p.name, p.kind.name, default(p.default)]
            for p in inspect.signature(f).parameters.values()]

out = {"init": sig(core.init), "methods": {}, "enums": {}, "info": {}}
for name in CLASSES:
    cls = getattr(core, name)
    for m, f in vars(cls).items():
        if m.startswith("_") or not callable(f):
            continue
        out["methods"][f"{name}.{m}"] = sig(f)
    for m, f in vars(cls).items():
        if isinstance(f, property) and not m.startswith("_"):
            out["methods"][f"{name}.{m}"] = "property"
for name in ENUMS:
    out["enums"][name] = {m.name: m.value for m in getattr(core, name)}
for name in ["ClusterInfo", "TrialInfo", "RendezvousInfo", "ResourcesInfo"]:
    cls = getattr(det, name)
    out["info"][name] = sig(cls.__init__)
    out["info"][name + " attributes"] = sorted(
        m for m, f in vars(cls).items() if isinstance(f, property) and not m.startswith("_")
    )
out["core names"] = sorted(n for n in dir(core) if not n.startswith("_"))
print(json.dumps(out))
"""


def _dump(python: str, root: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run(
        [python, "-c", DUMP, root], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def both() -> tuple[dict[str, Any], dict[str, Any]]:
    if not DET_PYTHON.exists():
        pytest.skip("no .venv-det with determined==0.38.1")
    return _dump(str(DET_PYTHON), "determined"), _dump(
        str(REPO / ".venv" / "bin" / "python"), "harness"
    )


def _compatible(theirs: Any, ours: Any) -> bool:
    """Same parameters in order; ours may add some with defaults at the end (a call written for
    Determined binds the same way)."""
    if theirs == "property" or ours == "property":
        return theirs == ours
    if ours[: len(theirs)] != theirs:
        return False
    return all(d is not None for _, _kind, d in ours[len(theirs) :])


# Determined's experimental / profiler / unmanaged parts are not part of this harness.
NOT_OURS = {
    "DummyExperimentalCoreContext",
    "DummyProfilerContext",
    "ExperimentalCoreContext",
    "ProfilerContext",
}


def test_init(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    theirs, ours = both
    assert _compatible(theirs["init"], ours["init"]), (theirs["init"], ours["init"])


def test_every_method_of_determined_exists_with_its_parameters(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    theirs, ours = both
    bad = {
        name: (sig, ours["methods"].get(name))
        for name, sig in theirs["methods"].items()
        if not _compatible(sig, ours["methods"].get(name) or [])
    }
    assert bad == {}


def test_enums_and_names(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    theirs, ours = both
    assert ours["enums"] == theirs["enums"]
    assert set(theirs["core names"]) - set(ours["core names"]) - NOT_OURS == set()


def test_info_classes(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    theirs, ours = both
    for name, value in theirs["info"].items():
        if name.endswith("attributes"):
            assert set(value) <= set(ours["info"][name]), name
        else:
            assert _compatible(value, ours["info"][name]), (name, value, ours["info"][name])
