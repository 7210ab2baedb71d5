"""PyTorchCallback hooks under Trainer.fit off a cluster: order, arguments, checkpointed state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from harness import pytorch

HPARAMS = {"global_batch_size": 8}


def dataset(n: int = 32) -> torch.utils.data.TensorDataset:
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(n, 3, generator=gen)
    return torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))


class Recorder(pytorch.PyTorchCallback):
    """Every hook call as (name, arguments); its state is the number of batches it has seen."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.batches_seen = 0
        self.loaded: dict[str, Any] | None = None

    def on_trial_startup(self, first_batch_idx: int, checkpoint_uuid: str | None) -> None:
        self.calls.append(("trial_startup", first_batch_idx, checkpoint_uuid))

    def on_trial_shutdown(self) -> None:
        self.calls.append(("trial_shutdown",))

    def on_training_start(self) -> None:
        self.calls.append(("training_start",))

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        self.calls.append(("epoch_start", epoch_idx))

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        self.calls.append(("epoch_end", epoch_idx))

    def on_training_workload_end(self, avg_metrics: dict[str, Any], batch_metrics: Any) -> None:
        self.batches_seen += len(batch_metrics)
        assert set(avg_metrics) == {"loss", "batches", "epochs"}
        assert avg_metrics["loss"] == pytest.approx(
            sum(m["loss"] for m in batch_metrics) / len(batch_metrics)
        )
        self.calls.append(("workload_end", avg_metrics["batches"], len(batch_metrics)))

    def on_validation_start(self) -> None:
        self.calls.append(("validation_start",))

    def on_validation_epoch_start(self) -> None:
        self.calls.append(("validation_epoch_start",))

    def on_validation_epoch_end(self, outputs: list[Any]) -> None:
        self.calls.append(("validation_epoch_end", len(outputs)))

    def on_validation_end(self, metrics: dict[str, Any]) -> None:
        self.calls.append(("validation_end", sorted(metrics)))

    def on_checkpoint_load_start(self, checkpoint: dict[str, Any]) -> None:
        self.calls.append(("checkpoint_load_start", sorted(checkpoint["callbacks"])))

    def on_checkpoint_save_start(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["extra"] = "added by a callback"  # saved with the checkpoint
        self.calls.append(("checkpoint_save_start", checkpoint["callbacks"]["rec"]))

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        assert (Path(checkpoint_dir) / "state_dict.pth").exists()
        self.calls.append(("checkpoint_write_end",))

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        self.calls.append(("checkpoint_upload_end", bool(uuid)))

    def state_dict(self) -> dict[str, Any]:
        return {"batches_seen": self.batches_seen}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.loaded = dict(state_dict)
        self.batches_seen = state_dict["batches_seen"]


class Tiny(pytorch.PyTorchTrial):
    """A native-AMP trial as Determined documents it; on CPU the scaler's scale grows each batch."""

    stop_at: int | None = None
    scaler_enabled = True

    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        self.scaler = context.wrap_scaler(
            torch.amp.GradScaler(
                "cpu", init_scale=2.0**8, growth_interval=1, enabled=self.scaler_enabled
            )
        )
        self.model = context.wrap_model(nn.Linear(3, 1))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.01))
        self.recorder = Recorder()
        self.losses: dict[int, float] = {}

    def build_callbacks(self) -> dict[str, pytorch.PyTorchCallback]:
        return {"rec": self.recorder}

    def build_training_data_loader(self) -> Any:
        return torch.utils.data.DataLoader(dataset(), batch_size=8, shuffle=True)

    def build_validation_data_loader(self) -> Any:
        return torch.utils.data.DataLoader(dataset(16), batch_size=8)

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Any:
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(self.scaler.scale(loss))
        self.context.step_optimizer(self.opt, scaler=self.scaler)
        self.scaler.update()
        self.losses[batch_idx] = loss.item()
        if batch_idx == self.stop_at:
            self.context.set_stop_requested(True)
        return loss

    def evaluate_batch(self, batch: Any) -> dict[str, Any]:
        x, y = batch
        return {"val_loss": nn.functional.mse_loss(self.model(x), y)}


def fit(seed: int, stop_at: int | None = None, kind: type[Tiny] = Tiny, **kwargs: Any) -> Tiny:
    torch.manual_seed(seed)
    with pytorch.init(hparams=HPARAMS) as context:
        trial = kind(context)
        trial.stop_at = stop_at
        kwargs.setdefault("max_length", pytorch.Batch(6))
        pytorch.Trainer(trial, context).fit(
            reporting_period=pytorch.Batch(3),
            validation_period=pytorch.Batch(3),
            checkpoint_period=pytorch.Batch(4),
            **kwargs,
        )
    return trial


def latest(storage: Path) -> Path:
    return max(storage.glob("*/state_dict.pth"), key=lambda p: p.stat().st_mtime)


VALIDATION = [
    ("validation_start",),
    ("validation_epoch_start",),
    ("validation_epoch_end", 2),
    ("validation_end", ["val_loss"]),
]


def checkpoint(batches_seen: int) -> list[tuple[Any, ...]]:
    return [
        ("checkpoint_save_start", {"batches_seen": batches_seen}),
        ("checkpoint_write_end",),
        ("checkpoint_upload_end", True),
    ]


class TestHooks:
    def test_hooks_run_in_determined_order_with_its_arguments(self, off_cluster: Path) -> None:
        trial = fit(0)
        assert trial.recorder.calls == [
            ("trial_startup", 0, None),
            ("training_start",),
            ("epoch_start", 0),
            ("workload_end", 3, 3),  # reporting and validation both end at batch 3
            *VALIDATION,
            *checkpoint(3),  # off a cluster the policy is "all": a checkpoint per validation
            ("epoch_end", 0),
            ("workload_end", 4, 1),  # the checkpoint period; it is not current at batch 4
            *checkpoint(4),
            ("epoch_start", 1),
            ("workload_end", 6, 2),  # the end: report, validate, checkpoint
            *VALIDATION,
            *checkpoint(6),
            ("trial_shutdown",),
        ]
        state = torch.load(latest(off_cluster), weights_only=False)
        assert state["callbacks"] == {"rec": {"batches_seen": 6}}
        assert state["extra"] == "added by a callback"
        assert state["scaler_state_dict"]["scale"] == 2.0 ** (8 + 6)  # grew at every update

    def test_pause_and_resume_restore_callback_and_scaler_state(self, off_cluster: Path) -> None:
        whole = fit(1)
        first = fit(1, stop_at=1)  # stops at the next period end: batch 3
        assert sorted(first.losses) == [0, 1, 2]
        ckpt = latest(off_cluster).parent.name
        second = fit(5, latest_checkpoint=ckpt)
        assert sorted(second.losses) == [3, 4, 5]
        assert second.recorder.calls[:3] == [
            ("trial_startup", 0, ckpt),
            ("checkpoint_load_start", ["rec"]),
            ("training_start",),
        ]
        assert second.recorder.loaded == {"batches_seen": 3}
        assert second.recorder.batches_seen == whole.recorder.batches_seen == 6
        assert second.scaler.get_scale() == whole.scaler.get_scale() == 2.0 ** (8 + 6)
        for i in range(6):
            assert (first.losses if i < 3 else second.losses)[i] == whole.losses[i], i

    def test_shutdown_runs_when_training_raises(self, off_cluster: Path) -> None:
        class Failing(Tiny):
            def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Any:
                raise RuntimeError("boom")

        torch.manual_seed(0)
        with pytorch.init(hparams=HPARAMS) as context:
            trial = Failing(context)
            with pytest.raises(RuntimeError, match="boom"):
                pytorch.Trainer(trial, context).fit(max_length=pytorch.Batch(2))
        assert [c[0] for c in trial.recorder.calls] == [
            "trial_startup", "training_start", "epoch_start", "trial_shutdown",
        ]  # fmt: skip

    def test_on_checkpoint_end_is_deprecated_but_still_called(self, off_cluster: Path) -> None:
        dirs: list[str] = []

        class Old(pytorch.PyTorchCallback):
            def on_checkpoint_end(self, checkpoint_dir: str) -> None:
                dirs.append(checkpoint_dir)

        class WithOld(Tiny):
            def build_callbacks(self) -> dict[str, pytorch.PyTorchCallback]:
                return {"old": Old()}

        torch.manual_seed(0)
        with pytorch.init(hparams=HPARAMS) as context:
            trial = WithOld(context)
            with pytest.warns(FutureWarning, match="on_checkpoint_write_end") as warned:
                pytorch.Trainer(trial, context).fit(max_length=pytorch.Batch(2))
        assert warned[0].filename == __file__  # points at the fit() call
        assert len(dirs) == 1 and Path(dirs[0]).name in str(latest(off_cluster))

    def test_a_checkpoint_without_callback_state_starts_the_callback_fresh(
        self, off_cluster: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        class Plain(Tiny):
            def build_callbacks(self) -> dict[str, pytorch.PyTorchCallback]:
                return {}

        fit(0, kind=Plain, max_length=pytorch.Batch(1))
        resumed = fit(0, latest_checkpoint=latest(off_cluster).parent.name)
        assert resumed.recorder.loaded is None
        assert "holds no state for it" in caplog.text


class TestScalerWrapping:
    def test_wrap_scaler_only_once_and_before_wrap_model(self) -> None:
        with pytorch.init(hparams=HPARAMS) as context:
            context.wrap_scaler(torch.amp.GradScaler("cpu", enabled=False))
            with pytest.raises(RuntimeError, match="only once"):
                context.wrap_scaler(torch.amp.GradScaler("cpu"))
        with pytorch.init(hparams=HPARAMS) as context:
            context.wrap_model(nn.Linear(1, 1))
            with pytest.raises(RuntimeError, match="before wrap_model"):
                context.wrap_scaler(torch.amp.GradScaler("cpu"))

    def test_a_disabled_scaler_trains_like_an_enabled_one_on_cpu(self, off_cluster: Path) -> None:
        disabled = fit(3, kind=type("Disabled", (Tiny,), {"scaler_enabled": False}))
        assert torch.load(latest(off_cluster), weights_only=False)["scaler_state_dict"] == {}
        enabled = fit(3)
        for i in range(6):  # scaling by a power of two and unscaling again changes nothing
            assert disabled.losses[i] == pytest.approx(enabled.losses[i], rel=1e-6), i
