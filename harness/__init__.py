"""Determined's harness for user code, standard library only: ``import harness as det``.

``det.core.init()`` is the Core API; ``det.get_cluster_info()`` tells a task where it runs;
``harness.exec.launch`` is what task containers run around the user's command. Torch-specific
helpers will live in ``harness.pytorch`` (the only place that may import torch).
"""

from harness import core
from harness._info import ClusterInfo, TrialInfo, get_cluster_info
from harness.core import InvalidHP

__all__ = ["ClusterInfo", "InvalidHP", "TrialInfo", "core", "get_cluster_info"]
