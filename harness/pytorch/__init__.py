"""Determined's PyTorch trial API (``determined.pytorch``): ``import harness.pytorch as pytorch``.

``PyTorchTrial`` subclasses build their models with a ``PyTorchTrialContext``;
``harness.pytorch.init()`` gives the context and ``Trainer(trial, context).fit(...)`` trains,
validates, checkpoints, reports through the Core API and resumes from checkpoints;
``load_trial_from_checkpoint_path`` rebuilds a trained trial from a downloaded checkpoint. This
package is the only part of ``harness`` that imports torch.
"""

from harness.pytorch._callback import PyTorchCallback
from harness.pytorch._context import LRScheduler, PyTorchTrialContext, to_device
from harness.pytorch._data import DataLoader, TorchData, data_length
from harness.pytorch._load import CheckpointLoadContext, load_trial_from_checkpoint_path
from harness.pytorch._reducer import MetricReducer, Reducer
from harness.pytorch._trainer import Trainer, init
from harness.pytorch._trial import PyTorchTrial
from harness.pytorch._units import Batch, Epoch, TrainUnit

__all__ = [
    "Batch",
    "CheckpointLoadContext",
    "DataLoader",
    "Epoch",
    "LRScheduler",
    "MetricReducer",
    "PyTorchCallback",
    "PyTorchTrial",
    "PyTorchTrialContext",
    "Reducer",
    "TorchData",
    "TrainUnit",
    "Trainer",
    "data_length",
    "init",
    "load_trial_from_checkpoint_path",
    "to_device",
]
