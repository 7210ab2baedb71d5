"""``PyTorchTrial``: what a user subclasses (Determined's ``determined.pytorch.PyTorchTrial``)."""

from __future__ import annotations

from typing import Any

import torch

from harness.pytorch._callback import PyTorchCallback
from harness.pytorch._context import PyTorchTrialContext
from harness.pytorch._reducer import Reducer


class PyTorchTrial:
    """Subclass it; build models and optimizers in ``__init__`` with ``context.wrap_*``.

    Implement ``build_training_data_loader``, ``build_validation_data_loader``,
    ``train_batch`` and either ``evaluate_batch`` (metrics averaged over the validation batches
    of all workers) or ``evaluate_full_dataset`` (run by the chief on the whole loader).
    """

    trial_context_class = PyTorchTrialContext

    def __init__(self, context: PyTorchTrialContext) -> None:
        self.context = context

    def build_training_data_loader(self) -> Any:
        raise NotImplementedError("implement build_training_data_loader()")

    def build_validation_data_loader(self) -> Any:
        raise NotImplementedError("implement build_validation_data_loader()")

    def train_batch(
        self, batch: Any, epoch_idx: int, batch_idx: int
    ) -> torch.Tensor | dict[str, Any]:
        """Train one batch; return its loss or a dict of metrics (averaged per report)."""
        raise NotImplementedError("implement train_batch(batch, epoch_idx, batch_idx)")

    def evaluate_batch(self, batch: Any, batch_idx: int = 0) -> dict[str, Any]:
        raise NotImplementedError("implement evaluate_batch() or evaluate_full_dataset()")

    def evaluation_reducer(self) -> Reducer | dict[str, Reducer]:
        """How ``evaluate_batch``'s metrics combine over the validation set: one Reducer for all
        metrics, or one per metric name (AVG, the mean weighted by batch length, elsewhere)."""
        return Reducer.AVG

    def evaluate_full_dataset(self, data_loader: torch.utils.data.DataLoader) -> dict[str, Any]:
        raise NotImplementedError("implement evaluate_batch() or evaluate_full_dataset()")

    def get_batch_length(self, batch: Any) -> int:
        """Records in ``batch`` (the first tensor's first dimension by default)."""
        first = batch
        while isinstance(first, (list, tuple)) and first:
            first = first[0]
        if isinstance(first, dict) and first:
            first = next(iter(first.values()))
        return int(first.shape[0]) if isinstance(first, torch.Tensor) else 1

    def build_callbacks(self) -> dict[str, PyTorchCallback]:
        """Callbacks by name (the name keys their state in checkpoints); none by default."""
        return {}
