"""Determined's Core API (``determined.core``) for user code: ``with core.init() as ctx:``.

Names, signatures and defaults follow Determined 0.38.1 (docs/core-api.md lists what differs):
metrics and TensorBoard files, checkpoints on shared_fs/directory/s3/gcs, preemption in all three
modes, the 0.38 searcher operation, distributed collectives.
"""

from harness.core._checkpoint import CheckpointContext, DownloadMode, DummyCheckpointContext
from harness.core._context import Context, InvalidHP, NotOnCluster, init
from harness.core._distributed import DistributedContext, DummyDistributedContext
from harness.core._preempt import DummyPreemptContext, PreemptContext, PreemptMode
from harness.core._profiler import (
    DummyExperimentalCoreContext,
    DummyProfilerContext,
    ProfilerContext,
)
from harness.core._searcher import (
    DummySearcherContext,
    DummySearcherOperation,
    SearcherContext,
    SearcherContextMissing,
    SearcherMode,
    SearcherOperation,
    Unit,
)
from harness.core._storage import StorageNotSupported
from harness.core._tensorboard import TensorboardMode
from harness.core._train import DummyTrainContext, EarlyExitReason, TrainContext

__all__ = [
    "CheckpointContext",
    "Context",
    "DistributedContext",
    "DownloadMode",
    "DummyCheckpointContext",
    "DummyDistributedContext",
    "DummyExperimentalCoreContext",
    "DummyPreemptContext",
    "DummyProfilerContext",
    "DummySearcherContext",
    "DummySearcherOperation",
    "DummyTrainContext",
    "EarlyExitReason",
    "InvalidHP",
    "NotOnCluster",
    "PreemptContext",
    "PreemptMode",
    "ProfilerContext",
    "SearcherContext",
    "SearcherContextMissing",
    "SearcherMode",
    "SearcherOperation",
    "StorageNotSupported",
    "TensorboardMode",
    "TrainContext",
    "Unit",
    "init",
]
