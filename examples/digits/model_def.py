"""Handwritten digits (scikit-learn's bundled 8x8 images) as a PyTorchTrial.

A Determined PyTorchTrial with only its imports changed (``harness.pytorch`` for
``determined.pytorch``). The data ships inside scikit-learn: nothing is downloaded. Run it with
``det experiment create const.yaml .``; off a cluster: ``python3 model_def.py --batches 50``.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

import torch
from sklearn.datasets import load_digits
from torch import nn

from harness import pytorch

VALIDATION_SIZE = 297  # the last 297 of the 1797 images; the first 1500 train


def digits(train: bool) -> torch.utils.data.TensorDataset:
    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target, dtype=torch.long)
    cut = len(x) - VALIDATION_SIZE
    part = slice(None, cut) if train else slice(cut, None)
    return torch.utils.data.TensorDataset(x[part], y[part])


class DigitsTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        hidden = int(context.get_hparam("hidden_size"))
        self.model = context.wrap_model(
            nn.Sequential(
                nn.Linear(64, hidden),
                nn.ReLU(),
                nn.Dropout(float(context.get_hparam("dropout"))),
                nn.Linear(hidden, 10),
            )
        )
        self.optimizer = context.wrap_optimizer(
            torch.optim.SGD(
                self.model.parameters(),
                lr=float(context.get_hparam("learning_rate")),
                momentum=0.9,
            )
        )
        self.scheduler = context.wrap_lr_scheduler(
            torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=1, gamma=0.9),
            step_mode=pytorch.LRScheduler.StepMode.STEP_EVERY_EPOCH,
        )
        self.loss = nn.CrossEntropyLoss()

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            digits(train=True),
            batch_size=self.context.get_per_slot_batch_size(),
            shuffle=True,
            drop_last=True,
        )

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(digits(train=False), batch_size=99)

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        loss = self.loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        return {"loss": loss, "lr": self.scheduler.get_last_lr()[0]}

    def evaluate_batch(self, batch: Any) -> dict[str, Any]:
        x, y = batch
        logits = self.model(x)
        accuracy = (logits.argmax(dim=1) == y).float().mean()
        return {"validation_loss": self.loss(logits, y), "accuracy": accuracy}


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    parser = argparse.ArgumentParser(description="digits, off a cluster")
    parser.add_argument("--batches", type=int, default=100)
    args = parser.parse_args()
    torch.manual_seed(0)
    hparams = {"global_batch_size": 32, "learning_rate": 0.1, "hidden_size": 64, "dropout": 0.1}
    with pytorch.init(hparams=hparams) as train_context:
        trial = DigitsTrial(train_context)
        trainer = pytorch.Trainer(trial, train_context)
        trainer.fit(
            max_length=pytorch.Batch(args.batches),
            reporting_period=pytorch.Batch(10),
            validation_period=pytorch.Batch(50),
        )
