"""Training code written for Determined 0.38's Core API, unchanged: `import determined as det`.

It is what a Determined user has in their repository: it reads its hyperparameters and the
checkpoint to resume from out of the cluster info, trains (a made-up loss that depends on the
`lr` hyperparameter, so a search has something to find), reports training metrics, progress and
a validation metric, checkpoints periodically and on preemption, and resumes. Run by a hand-made
launcher (launcher.py) it trains on several processes through `det.core.DistributedContext`.
It prints which `determined` served it, so the tests can tell Resolute's from the real one.
"""

import json
import logging
import os
import time

import determined as det
from determined.common import util


def save(core_context, step):
    """Every worker calls it; the chief writes, the others wait for it."""
    if core_context.distributed.rank == 0:
        with core_context.checkpoint.store_path({"steps_completed": step}) as (path, uuid):
            (path / "state.json").write_text(json.dumps({"steps_completed": step}))
        logging.info(f"checkpoint {uuid} at step {step}")
    core_context.distributed.allgather(None)


def train(core_context, hparams, latest_checkpoint):
    steps, step_s = int(hparams["steps"]), float(hparams.get("step_s", 0.05))
    ckpt_every = int(hparams.get("ckpt_every", 5))
    lr = float(hparams.get("lr", 0.1))
    start = 0
    if latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(latest_checkpoint) as path:
            start = json.loads((path / "state.json").read_text())["steps_completed"]
    rank = core_context.distributed.rank
    print(f"rank {rank} of {core_context.distributed.size} started at step {start}", flush=True)
    for step in range(start + 1, steps + 1):
        time.sleep(step_s)
        losses = core_context.distributed.allgather((lr - 0.1) ** 2 + 1.0 / step)
        if rank == 0:
            loss = sum(losses) / len(losses)
            core_context.train.report_training_metrics(steps_completed=step, metrics={"loss": loss})
            core_context.train.report_progress(step / steps)
        if step % ckpt_every == 0:
            save(core_context, step)
        if core_context.preempt.should_preempt():
            if step % ckpt_every:
                save(core_context, step)
            print(f"preempted at step {step}", flush=True)
            return
    if rank == 0:
        final = (lr - 0.1) ** 2 + 1.0 / steps
        core_context.train.report_validation_metrics(
            steps_completed=steps, metrics={"validation_loss": final, "batches": steps}
        )
        core_context.train.report_metrics(util._INFERENCE, steps, {"examples": steps * 8})
        core_context.train.set_status("done")
    if steps % ckpt_every:
        save(core_context, steps)
    print("done", flush=True)


def main():
    info = det.get_cluster_info()
    assert info is not None, "this example only runs on-cluster"
    assert info.task_type == "TRIAL", info.task_type
    print(f"determined from {det.__file__}", flush=True)
    print(f"trial {info.trial.trial_id} of experiment {info.trial.experiment_id}", flush=True)
    distributed = None
    if "LAUNCHER_RANK" in os.environ:  # set by launcher.py
        rank, size = int(os.environ["LAUNCHER_RANK"]), int(os.environ["LAUNCHER_SIZE"])
        distributed = det.core.DistributedContext(
            rank=rank,
            size=size,
            local_rank=rank,
            local_size=size,
            cross_rank=0,
            cross_size=1,
            chief_ip="127.0.0.1",
        )
    with det.core.init(distributed=distributed) as core_context:
        train(core_context, info.trial.hparams, info.latest_checkpoint)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    main()
