"""A PyTorchTrial written for Determined 0.38, unchanged: `from determined import pytorch`.

A linear regression on a fixed synthetic data set (nothing downloaded). Run on the cluster with
`python3 -m determined.launch.torch_distributed --trial model_def:LinearTrial` (the legacy
entrypoint form), or by train.py through `pytorch.Trainer`.
"""

from typing import Any, Dict

import torch
from torch import nn

from determined import pytorch

FEATURES = 4


def dataset(n: int, seed: int) -> torch.utils.data.TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.arange(1.0, FEATURES + 1).unsqueeze(1)
    y = x @ w + 0.5 + 0.01 * torch.randn(n, 1, generator=g)
    return torch.utils.data.TensorDataset(x, y)


class LinearTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        self.model = context.wrap_model(nn.Linear(FEATURES, 1))
        self.optimizer = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=float(context.get_hparam("lr")))
        )

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            dataset(512, 0), batch_size=self.context.get_per_slot_batch_size(), shuffle=True
        )

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            dataset(128, 1), batch_size=self.context.get_per_slot_batch_size()
        )

    def train_batch(
        self, batch: pytorch.TorchData, epoch_idx: int, batch_idx: int
    ) -> Dict[str, Any]:
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        return {"loss": loss}

    def evaluate_batch(self, batch: pytorch.TorchData) -> Dict[str, Any]:
        x, y = batch
        return {"validation_loss": nn.functional.mse_loss(self.model(x), y)}
