"""optimizations.aggregation_frequency: gradients accumulate over N batches, one step per N."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from harness import pytorch
from harness.pytorch._context import LRScheduler, auto_steps
from harness.pytorch._legacy import aggregation_frequency
from tests.harness.pytorch.test_distributed import HPARAMS, REPO, LinearTrial, free_port

BATCH = 4


def dataset() -> torch.utils.data.TensorDataset:
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(8 * BATCH, 3, generator=gen)
    return torch.utils.data.TensorDataset(x, x @ torch.tensor([[1.0], [-2.0], [0.5]]))


class Linear(pytorch.PyTorchTrial):
    average = True
    auto_zero_grads = True

    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        torch.manual_seed(0)
        self.model = context.wrap_model(nn.Linear(3, 1))
        self.initial = copy.deepcopy(self.model)
        self.opt = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=0.1),
            average_aggregated_gradients=self.average,
        )
        self.sched = context.wrap_lr_scheduler(
            torch.optim.lr_scheduler.StepLR(self.opt, step_size=1, gamma=0.5),
            pytorch.LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP,
        )
        self.steps = 0
        self.opt.register_step_post_hook(lambda *_: setattr(self, "steps", self.steps + 1))

    def build_training_data_loader(self) -> Any:
        return torch.utils.data.DataLoader(dataset(), batch_size=BATCH)  # in order

    def build_validation_data_loader(self) -> Any:
        return torch.utils.data.DataLoader(dataset(), batch_size=8 * BATCH)

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Any:
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt, auto_zero_grads=self.auto_zero_grads)
        return loss

    def evaluate_batch(self, batch: Any) -> dict[str, Any]:
        x, y = batch
        return {"val_loss": nn.functional.mse_loss(self.model(x), y)}


def train(kind: type[Linear], batches: int, aggregation_frequency: int) -> Linear:
    with pytorch.init(hparams={}, aggregation_frequency=aggregation_frequency) as context:
        trial = kind(context)
        pytorch.Trainer(trial, context).fit(
            max_length=pytorch.Batch(batches), checkpoint_policy="none"
        )
    return trial


def one_step(model: nn.Module, losses_of: Any, lr: float) -> nn.Module:
    """``model`` after one SGD step on the loss that ``losses_of(model)`` combines."""
    model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses_of(model).backward()
    opt.step()
    return model


def batch_losses(model: nn.Module, first: int, count: int) -> list[torch.Tensor]:
    x, y = dataset().tensors
    return [
        nn.functional.mse_loss(
            model(x[i * BATCH : (i + 1) * BATCH]), y[i * BATCH : (i + 1) * BATCH]
        )
        for i in range(first, first + count)
    ]


def assert_same_weights(a: nn.Module, b: nn.Module) -> None:
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.allclose(pa, pb, atol=1e-6), (pa, pb)


class TestAggregation:
    def test_four_batches_step_like_one_step_on_their_mean_loss(self, off_cluster: Path) -> None:
        trial = train(Linear, 4, aggregation_frequency=4)
        assert trial.steps == 1
        expected = one_step(trial.initial, lambda m: sum(batch_losses(m, 0, 4)) / 4, lr=0.1)
        assert_same_weights(trial.model, expected)

    def test_without_averaging_the_gradients_are_summed(self, off_cluster: Path) -> None:
        kind = type("Summed", (Linear,), {"average": False})
        trial = train(kind, 4, aggregation_frequency=4)
        expected = one_step(trial.initial, lambda m: sum(batch_losses(m, 0, 4)), lr=0.1)
        assert_same_weights(trial.model, expected)

    def test_steps_and_lr_schedules_follow_optimizer_steps(self, off_cluster: Path) -> None:
        trial = train(Linear, 8, aggregation_frequency=4)  # two windows
        assert trial.steps == 2
        assert trial.sched.get_last_lr() == [0.1 * 0.5**2]  # STEP_EVERY_OPTIMIZER_STEP: twice
        first = one_step(trial.initial, lambda m: sum(batch_losses(m, 0, 4)) / 4, lr=0.1)
        second = one_step(first, lambda m: sum(batch_losses(m, 4, 4)) / 4, lr=0.05)
        assert_same_weights(trial.model, second)

    def test_frequency_one_is_unchanged(self, off_cluster: Path) -> None:
        trial = train(Linear, 2, aggregation_frequency=1)
        assert trial.steps == 2
        first = one_step(trial.initial, lambda m: batch_losses(m, 0, 1)[0], lr=0.1)
        assert_same_weights(trial.model, one_step(first, lambda m: batch_losses(m, 1, 1)[0], 0.05))

    def test_auto_zero_grads_false_is_refused_with_aggregation(self, off_cluster: Path) -> None:
        kind = type("NoZero", (Linear,), {"auto_zero_grads": False})
        with pytest.raises(ValueError, match=r"auto_zero_grads=False .*aggregation_frequency 4"):
            train(kind, 4, aggregation_frequency=4)
        assert train(kind, 1, aggregation_frequency=1).steps == 1  # fine without aggregation

    def test_aggregation_frequency_below_one_is_refused(self) -> None:
        with (
            pytest.raises(ValueError, match="aggregation_frequency must be >= 1"),
            pytorch.init(hparams={}, aggregation_frequency=0),
        ):
            pass


def test_legacy_entrypoints_take_the_frequency_from_the_experiment_config() -> None:
    assert aggregation_frequency({"optimizations": {"aggregation_frequency": 4}}) == 4
    assert aggregation_frequency({"optimizations": {}}) == aggregation_frequency({}) == 1


EVERY_BATCH = LRScheduler.StepMode.STEP_EVERY_BATCH
EVERY_EPOCH = LRScheduler.StepMode.STEP_EVERY_EPOCH
EVERY_STEP = LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP


@pytest.mark.parametrize(
    ("mode", "frequency", "n", "epoch_len", "expected"),
    [
        (EVERY_BATCH, 1, 1, 5, [1] * 10),
        (EVERY_BATCH, 2, 1, 5, [0, 1] * 5),
        (EVERY_BATCH, 1, 4, 5, [0, 0, 0, 4, 0, 0, 0, 4, 0, 0]),  # a window's batches at once
        (EVERY_BATCH, 3, 2, 5, [0, 0, 0, 1, 0, 1, 0, 0, 0, 1]),
        (EVERY_STEP, 1, 2, 5, [0, 1] * 5),
        (EVERY_STEP, 4, 2, 5, [0, 0, 0, 1, 0, 0, 0, 1, 0, 0]),  # counted in batches, as there
        (EVERY_EPOCH, 1, 1, 5, [0, 0, 0, 0, 1, 0, 0, 0, 0, 1]),
        (EVERY_EPOCH, 2, 1, 5, [0] * 9 + [1]),
        (EVERY_EPOCH, 1, 4, 5, [0, 0, 0, 1, 0, 0, 0, 1, 0, 0]),  # before a step in the next epoch
        (LRScheduler.StepMode.MANUAL_STEP, 1, 1, 5, [0] * 10),
    ],
)
def test_automatic_lr_steps_follow_determined(
    mode: LRScheduler.StepMode, frequency: int, n: int, epoch_len: int, expected: list[int]
) -> None:
    sched = LRScheduler(None, mode, frequency)
    assert [auto_steps(sched, b, n, epoch_len) for b in range(10)] == expected


def test_ddp_workers_all_reduce_once_per_window_and_match_one_process(
    tmp_path: Path, off_cluster: Path
) -> None:
    """Two gloo workers with aggregation_frequency 2: the first batch of each window skips the
    all-reduce (no_sync), and the weights equal one process's with the global batch."""
    with pytorch.init(hparams=HPARAMS, aggregation_frequency=2) as context:
        single = LinearTrial(context)
        pytorch.Trainer(single, context).fit(
            max_length=pytorch.Batch(8), reporting_period=pytorch.Batch(4)
        )
    port = str(free_port())
    procs = []
    for rank in range(2):
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "XDG_DATA_HOME": str(tmp_path / "ddp-data"),
            "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
        }  # fmt: skip
        argv = [
            sys.executable, "-m", "tests.harness.pytorch.ddp_aggregation_worker",
            f"{tmp_path}/{rank}.json",
        ]  # fmt: skip
        procs.append(
            subprocess.Popen(
                argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
        )
    for p in procs:
        out, _ = p.communicate(timeout=180)
        assert p.returncode == 0, out.decode()[-3000:]
    ranks = [json.loads((tmp_path / f"{r}.json").read_text()) for r in range(2)]
    for r in ranks:  # 8 batches in windows of 2: only each window's last batch all-reduces
        assert r["allreduces"] == [1, 3, 5, 7]
    expected = [p.detach().flatten().tolist() for p in single.model.parameters()]
    for r in ranks:
        for got, want in zip(r["weights"], expected, strict=True):
            assert got == pytest.approx(want, rel=1e-5, abs=1e-6)
