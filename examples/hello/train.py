"""The quick-start trial: a tiny torch regression on synthetic data, driven by the Core API.

It is a Determined Core API script; the import is the only line that differs
(``import harness as det`` instead of ``import determined as det``). On a cluster it trains for
the searcher's ``max_length`` batches, reports training metrics every ``REPORT_EVERY`` batches
and validation metrics at the end, checkpoints every ``CHECKPOINT_EVERY`` batches and when
preempted (then exits 0, to be resumed from that checkpoint at the same step).

Off a cluster: ``python train.py --max-length 30 --checkpoint-dir /tmp/ckpt [--resume UUID]``.
"""

from __future__ import annotations

import argparse
import logging
import math
import pathlib
from typing import Any

import torch
from torch import nn

import harness as det

REPORT_EVERY = 10
CHECKPOINT_EVERY = 50
BATCH_SIZE = 32
DEFAULT_HPARAMS = {"learning_rate": 0.01, "hidden": 64}


def make_batch(step: int, size: int = BATCH_SIZE) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch ``step`` of y = 3x + 1 + noise; the same step always gives the same batch."""
    gen = torch.Generator().manual_seed(step)
    x = torch.rand(size, 1, generator=gen) * 2 - 1
    return x, 3 * x + 1 + 0.1 * torch.randn(size, 1, generator=gen)


def build(hparams: dict[str, Any]) -> tuple[nn.Module, torch.optim.Optimizer]:
    hidden = int(hparams.get("hidden", DEFAULT_HPARAMS["hidden"]))
    model = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, 1))
    lr = float(hparams.get("learning_rate", DEFAULT_HPARAMS["learning_rate"]))
    return model, torch.optim.Adam(model.parameters(), lr=lr)


def save(core_context: det.core.Context, model: nn.Module, opt: Any, steps: int, trial: int) -> str:
    with core_context.checkpoint.store_path({"steps_completed": steps}) as (path, storage_id):
        state = {"model": model.state_dict(), "opt": opt.state_dict(), "trial_id": trial}
        torch.save(state, path / "state.pt")
    logging.info("saved checkpoint %s at step %d", storage_id, steps)
    return storage_id


def restore(
    core_context: det.core.Context, storage_id: str, model: nn.Module, opt: Any, trial: int
) -> int:
    """Load a checkpoint; returns the step to go on from (0 when warm-starting another trial)."""
    with core_context.checkpoint.restore_path(storage_id) as path:
        state = torch.load(pathlib.Path(path) / "state.pt", weights_only=True)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    steps = int(core_context.checkpoint.get_metadata(storage_id)["steps_completed"])
    logging.info("resumed from checkpoint %s at step %d", storage_id, steps)
    return steps if state.get("trial_id") == trial else 0


def validate(model: nn.Module) -> float:
    with torch.no_grad():
        x, y = make_batch(-1, size=512)
        return float(nn.functional.mse_loss(model(x), y))


def main(
    core_context: det.core.Context,
    hparams: dict[str, Any],
    max_length: int,
    latest_checkpoint: str | None,
    trial_id: int,
) -> None:
    model, opt = build(hparams)
    steps = 0
    if latest_checkpoint:
        steps = restore(core_context, latest_checkpoint, model, opt, trial_id)
    saved_at = steps
    losses: list[float] = []
    while steps < max_length:
        x, y = make_batch(steps)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        losses.append(loss.item())
        if steps % REPORT_EVERY == 0 or steps == max_length:
            core_context.train.report_training_metrics(steps, {"loss": sum(losses) / len(losses)})
            losses.clear()
        if steps % CHECKPOINT_EVERY == 0:
            save(core_context, model, opt, steps, trial_id)
            saved_at = steps
        if steps % REPORT_EVERY == 0 and core_context.preempt.should_preempt():
            if saved_at != steps:
                save(core_context, model, opt, steps, trial_id)
            logging.info("preempted at step %d; exiting to be resumed later", steps)
            return
    val = validate(model)
    if not math.isfinite(val):
        raise det.InvalidHP(f"validation loss is {val}")
    core_context.train.report_validation_metrics(steps, {"loss": val})
    if saved_at != steps:
        save(core_context, model, opt, steps, trial_id)


def searcher_length(config: dict[str, Any]) -> int:
    length = config["searcher"]["max_length"]
    return int(length if isinstance(length, int) else next(iter(length.values())))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    info = det.get_cluster_info()
    storage: str | None = None
    if info is not None:
        hparams = info.trial.hparams
        max_length = searcher_length(info.trial._config)
        latest, trial_id = info.latest_checkpoint, info.trial.trial_id
        torch.manual_seed(info.trial.trial_seed)
    else:
        parser = argparse.ArgumentParser(description="hello example, off a cluster")
        parser.add_argument("--max-length", type=int, default=100)
        parser.add_argument("--checkpoint-dir", default=None)
        parser.add_argument("--resume", default=None, help="checkpoint id to resume from")
        args = parser.parse_args()
        hparams, max_length = dict(DEFAULT_HPARAMS), args.max_length
        latest, trial_id, storage = args.resume, 0, args.checkpoint_dir
        torch.manual_seed(0)
    with det.core.init(checkpoint_storage=storage) as core_context:
        main(core_context, hparams, max_length, latest, trial_id)
