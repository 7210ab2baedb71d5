"""``import determined as det`` in a task whose Python has no determined package: Determined
0.38.1's top-level names, served by the harness (``harness`` is the implementation; this is
the mapping, see ``harness/_compat/__init__.py``).

As ``harness`` does, names load on first use, so a script that imports ``determined`` for
``LOG_FORMAT`` does not pay for the Core API's (or torch's) imports.
"""

from __future__ import annotations

import importlib
from typing import Any

from harness import LOG_FORMAT

__version__ = "0.38.1+resolute"

__all__ = [
    "LOG_FORMAT",
    "ClusterInfo",
    "InvalidHP",
    "RendezvousInfo",
    "ResourcesInfo",
    "TrialInfo",
    "common",
    "core",
    "get_cluster_info",
    "import_from_path",
    "pytorch",
]

# name -> (module, attribute); a leading dot is a module of this package.
_HOMES = {
    "ClusterInfo": ("harness._info", "ClusterInfo"),
    "TrialInfo": ("harness._info", "TrialInfo"),
    "RendezvousInfo": ("harness._info", "RendezvousInfo"),
    "ResourcesInfo": ("harness._info", "ResourcesInfo"),
    "get_cluster_info": ("harness._info", "get_cluster_info"),
    "InvalidHP": ("harness.core", "InvalidHP"),
    "import_from_path": ("harness._imports", "import_from_path"),
}
_SUBMODULES = ("_info", "common", "core", "experimental", "launch", "pytorch")


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    elif name in _HOMES:
        home, attribute = _HOMES[name]
        value = getattr(importlib.import_module(home), attribute)
    else:
        raise AttributeError(f"module 'determined' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
