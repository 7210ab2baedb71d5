"""Determined's harness for user code, standard library only: ``import harness as det``.

``det.core.init()`` is the Core API; ``det.get_cluster_info()`` tells a task where it runs;
``harness.exec.launch`` is what task containers run around the user's command; ``det.pytorch`` is
the PyTorch trial API (the only place that may import torch). Tasks also reach all of this under
Determined's own module names (``import determined as det``, see ``harness._compat``).

The names below load on first use: the launcher runs for every task, trivial ones included, and
must not pay for the Core API's imports it never calls.
"""

from __future__ import annotations

# typing is only for annotations (strings here): the launcher, which every task runs,
# would pay for importing it.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from harness import core, pytorch
    from harness._info import (
        ClusterInfo,
        RendezvousInfo,
        ResourcesInfo,
        TrialInfo,
        get_cluster_info,
    )
    from harness.core import InvalidHP

# The standard format for the logging module: the WebUI's log viewer reads the level from it.
LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"

__all__ = [
    "LOG_FORMAT",
    "ClusterInfo",
    "InvalidHP",
    "RendezvousInfo",
    "ResourcesInfo",
    "TrialInfo",
    "core",
    "get_cluster_info",
    "pytorch",
]

_HOMES = {
    "core": "harness.core",
    "pytorch": "harness.pytorch",
    "ClusterInfo": "harness._info",
    "TrialInfo": "harness._info",
    "RendezvousInfo": "harness._info",
    "ResourcesInfo": "harness._info",
    "get_cluster_info": "harness._info",
    "InvalidHP": "harness.core",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    # Imported here: `importlib` (and its `warnings`) is more than the launcher needs.
    import importlib

    module = importlib.import_module(home)
    value = module if name in ("core", "pytorch") else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
