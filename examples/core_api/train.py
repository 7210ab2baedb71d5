"""A Core API script that uses every context: distributed, train, checkpoint, preempt, searcher.

It fits y = 2x - 1 with plain Python gradient descent (no framework, so it runs in any image),
and is a Determined Core API script with only its import changed (``import harness as det``).

- ``core_context.distributed``: rank and size; only the chief reports and checkpoints, the
  searcher operation's length is broadcast to every worker.
- ``core_context.searcher.operations()``: train each operation to its ``length`` (batches),
  report progress and complete it with the validation loss.
- ``core_context.train``: training metrics every ``REPORT_EVERY`` batches, validation metrics at
  the end of each operation.
- ``core_context.checkpoint``: ``store_path`` every ``CHECKPOINT_EVERY`` batches and on
  preemption; ``restore_path`` of ``info.latest_checkpoint`` on start (pause/activate, restarts).
- ``core_context.preempt``: checked every ``REPORT_EVERY`` batches; checkpoint then exit 0.

Off a cluster: ``python3 train.py`` (metrics are printed, checkpoints go to a local directory).
"""

from __future__ import annotations

import json
import logging
import pathlib
import random

import harness as det

REPORT_EVERY = 10
CHECKPOINT_EVERY = 50


def batch(step: int, size: int = 16) -> list[tuple[float, float]]:
    rng = random.Random(step)
    return [(x, 2 * x - 1 + rng.gauss(0, 0.05)) for x in (rng.uniform(-1, 1) for _ in range(size))]


def train_step(w: float, b: float, lr: float, step: int) -> tuple[float, float, float]:
    data = batch(step)
    loss = sum((w * x + b - y) ** 2 for x, y in data) / len(data)
    gw = sum(2 * (w * x + b - y) * x for x, y in data) / len(data)
    gb = sum(2 * (w * x + b - y) for x, y in data) / len(data)
    return w - lr * gw, b - lr * gb, loss


def validate(w: float, b: float) -> float:
    data = batch(-1, size=256)
    return sum((w * x + b - y) ** 2 for x, y in data) / len(data)


def save(core_context: det.core.Context, state: dict, steps: int) -> None:
    with core_context.checkpoint.store_path({"steps_completed": steps}) as (path, storage_id):
        (pathlib.Path(path) / "state.json").write_text(json.dumps(state))
    logging.info("checkpoint %s at batch %d", storage_id, steps)


def load(core_context: det.core.Context, storage_id: str, trial_id: int) -> dict | None:
    with core_context.checkpoint.restore_path(storage_id) as path:
        state = json.loads((pathlib.Path(path) / "state.json").read_text())
    if state["trial_id"] != trial_id:  # another trial's checkpoint: start from scratch
        return None
    logging.info("resumed from checkpoint %s at batch %d", storage_id, state["steps"])
    return state


def main(core_context: det.core.Context) -> None:
    dist = core_context.distributed
    rank, size, chief = dist.get_rank(), dist.get_size(), dist.get_rank() == 0
    logging.info("worker %d of %d (local rank %d, node %d)", rank, size,
                 dist.get_local_rank(), dist.get_cross_rank())  # fmt: skip
    info = det.get_cluster_info()
    hparams = info.trial.hparams if info else {"learning_rate": 0.1}
    trial_id = info.trial.trial_id if info else 0
    lr = float(hparams["learning_rate"])

    state = {"w": 0.0, "b": 0.0, "steps": 0, "trial_id": trial_id}
    latest = info.latest_checkpoint if info else None
    if latest:
        state = load(core_context, latest, trial_id) or state
    saved_at = state["steps"]

    for op in core_context.searcher.operations():
        losses: list[float] = []
        while state["steps"] < op.length:
            state["w"], state["b"], loss = train_step(state["w"], state["b"], lr, state["steps"])
            state["steps"] += 1
            losses.append(loss)
            steps = state["steps"]
            if steps % REPORT_EVERY == 0:
                if chief:
                    core_context.train.report_training_metrics(
                        steps, {"loss": sum(losses) / len(losses)}
                    )
                    op.report_progress(steps)
                losses.clear()
            if steps % CHECKPOINT_EVERY == 0 and chief:
                save(core_context, state, steps)
                saved_at = steps
            if steps % REPORT_EVERY == 0 and core_context.preempt.should_preempt():
                if chief and saved_at != steps:
                    save(core_context, state, steps)
                logging.info("preempted at batch %d: exiting to be resumed", steps)
                return
        val = validate(state["w"], state["b"])
        if chief:
            core_context.train.report_validation_metrics(state["steps"], {"validation_loss": val})
            op.report_completed(val)
    if chief and saved_at != state["steps"]:
        save(core_context, state, state["steps"])


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    with det.core.init() as core_context:
        main(core_context)
