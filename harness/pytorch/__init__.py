"""Determined's PyTorch trial API (``determined.pytorch``): ``import harness.pytorch as pytorch``.

``PyTorchTrial`` subclasses build their models with a ``PyTorchTrialContext``;
``harness.pytorch.init()`` gives the context and ``Trainer(trial, context).fit(...)`` trains,
validates, checkpoints, reports through the Core API and resumes from checkpoints. This package
is the only part of ``harness`` that imports torch.
"""

from harness.pytorch._callback import PyTorchCallback
from harness.pytorch._context import LRScheduler, PyTorchTrialContext
from harness.pytorch._data import DataLoader
from harness.pytorch._trainer import Trainer, init
from harness.pytorch._trial import PyTorchTrial
from harness.pytorch._units import Batch, Epoch, TrainUnit

__all__ = [
    "Batch",
    "DataLoader",
    "Epoch",
    "LRScheduler",
    "PyTorchCallback",
    "PyTorchTrial",
    "PyTorchTrialContext",
    "TrainUnit",
    "Trainer",
    "init",
]
