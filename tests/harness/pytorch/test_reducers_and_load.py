"""Metric reducers (evaluation_reducer, wrap_reducer) and load_trial_from_checkpoint_path, off a
cluster with real torch; the distributed side of wrap_reducer is Reducers.cross_slot."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from harness import pytorch
from harness._imports import import_from_path
from harness.pytorch._reducer import Reducers, reduce_rows

N = 24


def dataset() -> torch.utils.data.TensorDataset:
    x = torch.arange(N, dtype=torch.float32).reshape(N, 1)
    return torch.utils.data.TensorDataset(x, 2 * x)


class SumOfSquares(pytorch.MetricReducer):
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.total = 0.0

    def update(self, x: torch.Tensor) -> None:
        self.total += float((x**2).sum())

    def per_slot_reduce(self) -> Any:
        return self.total

    def cross_slot_reduce(self, per_slot_metrics: list[Any]) -> Any:
        return {"sum_sq": sum(per_slot_metrics)}


class Linear(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext, scale: float = 1.0) -> None:
        self.context = context
        self.scale = scale
        self.model = context.wrap_model(nn.Linear(1, 1))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=1e-4))
        self.count = context.wrap_reducer(len, name="val_count", for_training=False)
        self.seen = context.wrap_reducer(lambda xs: float(sum(xs)), name="train_seen")
        self.sum_sq = context.wrap_reducer(SumOfSquares(), for_training=False)

    def build_training_data_loader(self) -> Any:
        return pytorch.DataLoader(dataset(), batch_size=4)

    def build_validation_data_loader(self) -> Any:
        return pytorch.DataLoader(dataset(), batch_size=8)

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Any:
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        self.seen.update(len(x))
        return {"loss": loss}

    def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        x, _ = batch
        self.count.update(batch_idx)
        self.sum_sq.update(x)
        return {"batch_max": x.max(), "batch_sum": x.sum(), "mean_x": x.mean()}

    def evaluation_reducer(self) -> Any:
        return {"batch_max": pytorch.Reducer.MAX, "batch_sum": pytorch.Reducer.SUM}


def test_evaluation_reducer_and_wrapped_reducers_reach_the_reports(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "harness.core")
    with pytorch.init(hparams={}) as context:
        trial = Linear(context)
        pytorch.Trainer(trial, context).fit(
            max_length=pytorch.Batch(6),
            reporting_period=pytorch.Batch(3),
            validation_period=pytorch.Batch(6),
        )
    lines = [r.getMessage() for r in caplog.records]
    training = [m for m in lines if m.startswith("report_training_metrics")]
    assert len(training) == 2 and all(
        "'train_seen': 12.0" in m for m in training
    )  # reset per report
    (validation,) = [m for m in lines if m.startswith("report_validation_metrics")]
    values = float(sum(range(N)))
    assert f"'batch_max': {float(N - 1)}" in validation
    assert f"'batch_sum': {values}" in validation
    assert f"'mean_x': {values / N}" in validation
    assert "'val_count': 3" in validation
    assert f"'sum_sq': {float(sum(i * i for i in range(N)))}" in validation


def test_reducers_across_workers() -> None:
    reducers = Reducers()
    fn = reducers.wrap(lambda xs: xs, "order", True, True)
    assert isinstance(fn, pytorch.MetricReducer)
    obj = reducers.wrap(SumOfSquares(), None, True, True)
    # two workers' per-slot values: the function sees them interleaved, in batch order
    gathered = [[[0, 2, 4], 1.0], [[1, 3], 2.0]]
    assert Reducers.cross_slot(reducers.for_period(True), gathered) == {
        "order": [0, 1, 2, 3, 4],
        "sum_sq": 3.0,
    }
    with pytest.raises(AssertionError, match="wrapped twice"):
        reducers.wrap(obj, "again", True, True)
    with pytest.raises(AssertionError, match=r"a function or a pytorch\.MetricReducer"):
        reducers.wrap(3, "x", True, True)
    bad = Reducers()
    bad.wrap(lambda xs: 1, None, True, True)
    with pytest.raises(ValueError, match="must return a dict"):
        Reducers.cross_slot(bad.wrapped, [[[1]]])


def test_reduce_rows() -> None:
    rows = [{"a": 1.0, "b": 4.0, "s": "x"}, {"a": 3.0, "b": 2.0, "s": "y"}]
    assert reduce_rows(rows, [1.0, 3.0], pytorch.Reducer.AVG) == {"a": 2.5, "b": 2.5, "s": "y"}
    assert reduce_rows(rows, [1.0, 1.0], {"a": pytorch.Reducer.MIN, "b": pytorch.Reducer.SUM}) == {
        "a": 1.0,
        "b": 6.0,
        "s": "y",
    }


def _train_and_checkpoint(storage: Path) -> Path:
    with pytorch.init(hparams={"scale": 2}) as context:
        trial = Linear(context)
        pytorch.Trainer(trial, context).fit(max_length=pytorch.Batch(3))
        weight = trial.model.weight.detach().clone()
    (ckpt,) = [p.parent for p in storage.glob("*/state_dict.pth")]
    torch.save(weight, ckpt / "expected.pt")
    return ckpt


def test_load_trial_from_checkpoint_path(off_cluster: Path) -> None:
    ckpt = _train_and_checkpoint(off_cluster)
    trial = pytorch.load_trial_from_checkpoint_path(
        ckpt, trial_class=Linear, trial_kwargs={"scale": 3.0}
    )
    assert isinstance(trial, Linear) and trial.scale == 3.0
    assert isinstance(trial.context, pytorch.CheckpointLoadContext)
    assert trial.context.get_hparams() == {"scale": 2}
    assert torch.equal(trial.model.weight, torch.load(ckpt / "expected.pt"))
    # without trial_class: the class is imported by the name load_data.json records
    again = pytorch.load_trial_from_checkpoint_path(str(ckpt))
    assert type(again) is Linear and torch.equal(again.model.weight, trial.model.weight)
    with pytest.raises(ValueError, match=r"load_data\.json"):
        pytorch.load_trial_from_checkpoint_path(ckpt.parent)


def test_load_imports_the_trial_from_the_checkpoints_code(
    off_cluster: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ckpt = _train_and_checkpoint(off_cluster)
    (ckpt / "code").mkdir()
    (ckpt / "code" / "model_def.py").write_text(
        "from tests.harness.pytorch.test_reducers_and_load import Linear\n"
        "class FromCode(Linear):\n"
        "    pass\n"
    )
    spec = (ckpt / "load_data.json").read_text()
    spec = spec.replace(f"{__name__}:Linear", "model_def:FromCode")
    (ckpt / "load_data.json").write_text(spec)
    monkeypatch.chdir(tmp_path)
    trial = pytorch.load_trial_from_checkpoint_path(ckpt)
    assert type(trial).__name__ == "FromCode" and "model_def" not in sys.modules
    assert not (ckpt / "code" / "__pycache__").exists()


def test_import_from_path_does_not_mix_same_named_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in (("new", 1), ("old", 2)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model_def.py").write_text(f"VALUE = {value}\n")
    monkeypatch.chdir(tmp_path / "new")
    monkeypatch.syspath_prepend(str(tmp_path / "new"))
    import model_def  # type: ignore[import-not-found]

    assert model_def.VALUE == 1
    with import_from_path(tmp_path / "old"):
        import model_def as old  # type: ignore[import-not-found]

        assert old.VALUE == 2
        with pytest.raises(RuntimeError, match="does not nest"), import_from_path(tmp_path):
            pass
    assert sys.modules["model_def"] is model_def
    del sys.modules["model_def"]


def test_data_helpers() -> None:
    assert pytorch.data_length({"x": torch.zeros(5, 2)}) == 5
    assert pytorch.data_length([torch.zeros(3)]) == 3
    with pytest.raises(ValueError):
        pytorch.data_length([])
    moved = pytorch.to_device(
        {"a": [torch.ones(1)], "n": __import__("numpy").ones(2)}, torch.device("cpu")
    )
    assert isinstance(moved["n"], torch.Tensor) and moved["a"][0].device.type == "cpu"
