"""Determined's Core API (``determined.core``) for user code: ``with core.init() as ctx:``.

This is the part a trial needs today (issue 4): metrics, shared_fs/directory checkpoints,
preemption, one worker, the 0.38 searcher operation. Names and signatures follow Determined so
that the rest (distributed collectives, cloud storage, TensorBoard) extends it (issue 5).
"""

from harness.core._checkpoint import CheckpointContext, DownloadMode
from harness.core._context import Context, InvalidHP, init
from harness.core._distributed import DistributedContext, DummyDistributedContext
from harness.core._preempt import PreemptContext, PreemptMode
from harness.core._searcher import SearcherContext, SearcherMode, SearcherOperation, Unit
from harness.core._storage import StorageNotSupported
from harness.core._train import EarlyExitReason, TrainContext

__all__ = [
    "CheckpointContext",
    "Context",
    "DistributedContext",
    "DownloadMode",
    "DummyDistributedContext",
    "EarlyExitReason",
    "InvalidHP",
    "PreemptContext",
    "PreemptMode",
    "SearcherContext",
    "SearcherMode",
    "SearcherOperation",
    "StorageNotSupported",
    "TrainContext",
    "Unit",
    "init",
]
