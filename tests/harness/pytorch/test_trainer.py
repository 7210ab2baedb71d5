"""Trainer.fit off a cluster with real torch: periods, metrics, checkpoints and exact resumes."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import harness
from harness import pytorch
from harness.pytorch._legacy import fit_arguments, load_trial_class

HPARAMS = {"global_batch_size": 8, "lr": 0.05}


def dataset(n: int = 56) -> torch.utils.data.TensorDataset:
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(n, 4, generator=gen)
    return torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))


class Regression(pytorch.PyTorchTrial):
    """Dropout and a shuffled loader: resuming must restore both the RNG and the order."""

    loader_kind = "harness"

    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        self.model = context.wrap_model(
            nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.3), nn.Linear(16, 1))
        )
        self.opt = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=context.get_hparam("lr"), momentum=0.9)
        )
        self.sched = context.wrap_lr_scheduler(
            torch.optim.lr_scheduler.StepLR(self.opt, step_size=1, gamma=0.5),
            pytorch.LRScheduler.StepMode.STEP_EVERY_EPOCH,
        )
        self.losses: dict[int, float] = {}
        self.first_x: dict[int, torch.Tensor] = {}
        self.validations = 0
        self.stop_at: int | None = None

    def build_training_data_loader(self) -> Any:
        bs = self.context.get_per_slot_batch_size()
        if self.loader_kind == "harness":
            return pytorch.DataLoader(dataset(), batch_size=bs, shuffle=True)
        return torch.utils.data.DataLoader(dataset(), batch_size=bs, shuffle=True)

    def build_validation_data_loader(self) -> Any:
        return pytorch.DataLoader(dataset(20), batch_size=8)

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        self.losses[batch_idx] = loss.item()
        self.first_x[batch_idx] = x[0].clone()
        if batch_idx == self.stop_at:
            self.context.set_stop_requested(True)
        return {"loss": loss, "epoch": epoch_idx}

    def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        self.validations += batch_idx == 0
        x, y = batch
        return {"val_loss": nn.functional.mse_loss(self.model(x), y)}


def checkpoints(storage: Path) -> list[Path]:
    return sorted(storage.glob("*/state_dict.pth"), key=lambda p: p.stat().st_mtime)


def run(
    trial_class: type[Regression], seed: int, *, stop_at: int | None = None, **fit: Any
) -> Regression:
    torch.manual_seed(seed)
    with pytorch.init(hparams=HPARAMS) as context:
        trial = trial_class(context)
        trial.stop_at = stop_at
        fit.setdefault("max_length", pytorch.Batch(25))
        fit.setdefault("reporting_period", pytorch.Batch(5))
        pytorch.Trainer(trial, context).fit(**fit)
    return trial


def test_off_cluster_init_trains_validates_and_checkpoints(
    off_cluster: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    trial = run(Regression, 0, validation_period=pytorch.Epoch(1))
    assert sorted(trial.losses) == list(range(25))
    assert trial.validations == 4  # after epochs 1, 2 and 3 (7 batches each), and at the end
    assert len(checkpoints(off_cluster)) == 4  # policy "all" off a cluster: after each one
    assert trial.sched.get_last_lr() == [0.05 * 0.5**3]
    reported = [r.getMessage() for r in caplog.records if "report_training" in r.getMessage()]
    assert [m.split("steps_completed=")[1].split(",")[0] for m in reported] == [
        "5", "7", "10", "14", "15", "20", "21", "25",
    ]  # fmt: skip


@pytest.mark.parametrize("loader_kind", ["harness", "torch"])
def test_a_resumed_run_trains_exactly_like_an_uninterrupted_one(
    loader_kind: str, off_cluster: Path
) -> None:
    trial_class = type(f"Regression_{loader_kind}", (Regression,), {"loader_kind": loader_kind})
    whole = run(trial_class, 1)

    first = run(trial_class, 1, stop_at=8)  # stops at the next period end: batch 10 (epoch 1)
    assert sorted(first.losses) == list(range(10))
    ckpt = checkpoints(off_cluster)[-1]  # the whole run left one at batch 25 too
    second = run(trial_class, 999, latest_checkpoint=ckpt.parent.name)
    assert sorted(second.losses) == list(range(10, 25))

    for i in range(25):
        part = first if i < 10 else second
        assert torch.equal(part.first_x[i], whole.first_x[i]), i  # the same batches
        assert part.losses[i] == whole.losses[i], i  # the same dropout, weights and LR
    assert second.sched.get_last_lr() == whole.sched.get_last_lr()


def test_evaluate_full_dataset_is_an_alternative(off_cluster: Path) -> None:
    seen: list[int] = []

    class Full(Regression):
        evaluate_batch = pytorch.PyTorchTrial.evaluate_batch  # type: ignore[assignment]

        def evaluate_full_dataset(self, data_loader: Any) -> dict[str, Any]:
            seen.append(sum(len(x) for x, _ in data_loader))
            return {"val_loss": 1.0}

    run(Full, 0, max_length=pytorch.Batch(3), validation_period=pytorch.Batch(2))
    assert seen == [20, 20]


def test_test_mode_trains_one_batch(off_cluster: Path) -> None:
    trial = run(Regression, 0, test_mode=True)
    assert sorted(trial.losses) == [0]


def test_bad_train_batch_results_are_named(off_cluster: Path) -> None:
    class Bad(Regression):
        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Any:
            return 3

    with pytest.raises(TypeError, match="train_batch must return"):
        run(Bad, 0)


def test_fit_needs_a_max_length_off_a_cluster(off_cluster: Path) -> None:
    with pytest.raises(ValueError, match="max_length"):
        run(Regression, 0, max_length=None)


def test_global_batch_size_is_required_for_batch_sizes() -> None:
    with pytorch.init(hparams={"lr": 1}) as context:
        with pytest.raises(ValueError, match="global_batch_size"):
            context.get_per_slot_batch_size()
        with pytest.raises(ValueError, match="hyperparameter 'nope'"):
            context.get_hparam("nope")
        assert context.get_per_slot_batch_size.__name__ and context.distributed.get_size() == 1


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {"searcher": {"max_length": {"batches": 200}}, "min_validation_period": {"batches": 50},
             "min_checkpoint_period": {"epochs": 1}, "scheduling_unit": 10},
            {"max_length": pytorch.Batch(200), "validation_period": pytorch.Batch(50),
             "checkpoint_period": pytorch.Epoch(1), "reporting_period": pytorch.Batch(10)},
        ),
        (
            {"searcher": {"time_metric": "batches", "max_time": 40}, "checkpoint_policy": "none"},
            {"max_length": pytorch.Batch(40), "checkpoint_policy": "none"},
        ),
        (
            {"searcher": {"max_length": {"records": 800}}},
            {"max_length": pytorch.Batch(25)},
        ),
        (
            {"searcher": {"max_length": {"batches": 5}}, "profiling": {"enabled": True}},
            {"max_length": pytorch.Batch(5), "profiling_enabled": True},
        ),
        # Determined's expanded defaults: a period of 0 is off, not an error
        (
            {"searcher": {"max_length": {"batches": 5}}, "min_validation_period": {"batches": 0},
             "min_checkpoint_period": {"epochs": 0}},
            {"max_length": pytorch.Batch(5)},
        ),
    ],
)  # fmt: skip
def test_legacy_fit_arguments_follow_the_experiment_config(
    config: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert fit_arguments(config, {"global_batch_size": 32}) == expected


def test_legacy_entrypoints_name_a_pytorch_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "legacy_model_def.py").write_text(
        "from harness import pytorch\n"
        "class Good(pytorch.PyTorchTrial):\n    pass\n"
        "class Bad:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_trial_class("legacy_model_def:Good").__name__ == "Good"
    with pytest.raises(TypeError, match=r"not a harness\.pytorch\.PyTorchTrial"):
        load_trial_class("legacy_model_def:Bad")
    with pytest.raises(ImportError, match=r"no 'Missing'"):
        load_trial_class("legacy_model_def:Missing")
    with pytest.raises(ValueError, match=r"searcher\.max_length"):
        fit_arguments({"searcher": {}}, {})


def test_invalid_hp_checkpoints_and_ends_the_trial_quietly(off_cluster: Path) -> None:
    class Invalid(Regression):
        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            if batch_idx == 3:
                raise harness.InvalidHP("diverged")
            return super().train_batch(batch, epoch_idx, batch_idx)

    trial = run(Invalid, 0)  # core.init() reports the early exit and swallows InvalidHP
    assert sorted(trial.losses) == [0, 1, 2]
    (ckpt,) = checkpoints(off_cluster)
    assert torch.load(ckpt, weights_only=False)["trainer_state"]["batches_trained"] == 3


def test_a_checkpoint_of_another_model_definition_is_refused_by_name(off_cluster: Path) -> None:
    run(Regression, 0, max_length=pytorch.Batch(2))
    ckpt = checkpoints(off_cluster)[-1].parent.name

    class TwoModels(Regression):
        def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
            super().__init__(context)
            self.other = context.wrap_model(nn.Linear(1, 1))

    with pytest.raises(ValueError, match="holds 1 models; the trial wrapped 2"):
        run(TwoModels, 0, latest_checkpoint=ckpt)


def test_step_zero_validation_and_per_batch_schedulers(off_cluster: Path) -> None:
    class PerBatch(Regression):
        def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
            super().__init__(context)
            context.lr_schedulers.clear()
            self.sched = context.wrap_lr_scheduler(
                torch.optim.lr_scheduler.StepLR(self.opt, step_size=1, gamma=0.5),
                pytorch.LRScheduler.StepMode.STEP_EVERY_BATCH,
                frequency=2,
            )

    trial = run(PerBatch, 0, max_length=pytorch.Batch(5), step_zero_validation=True)
    assert trial.validations == 2  # before the first batch, and at the end
    assert trial.sched.get_last_lr() == [0.05 * 0.5**2]  # after batches 2 and 4


@pytest.mark.parametrize(
    ("every_s", "stop_at", "expected"),
    [
        (0.0, None, ["0.2", "0.4", "0.6", "0.8", "1.0"]),  # each report, as Determined does
        (3600.0, None, ["0.2", "1.0"]),  # the first, then none until the end
        (3600.0, 12, ["0.2", "0.6"]),  # asked to stop (seen at batch 15): where it stopped
    ],
)
def test_progress_goes_with_reports_at_most_every_few_seconds_and_at_the_end(
    every_s: float,
    stop_at: int | None,
    expected: list[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("harness.pytorch._trainer.PROGRESS_EVERY_S", every_s)
    caplog.set_level(logging.INFO)
    run(Regression, 0, stop_at=stop_at, checkpoint_policy="none")
    sent = [r.getMessage().split("=")[1] for r in caplog.records if "report_progress" in r.msg]
    assert sent == expected
