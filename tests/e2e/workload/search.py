"""End-to-end search workload: a quadratic bowl in `x` (best at 0.3), one validation per step.

Each step reports `loss` and `batches` (ASHA's time metric) as a validation, checkpoints, and
stops when the master asks it to (the searcher closing or pausing it) or after `steps`.
It resumes from its latest checkpoint. Prints `step N` and `preempted at step N`.
"""

import sys
import time

import harness as det

info = det.get_cluster_info()
hp = info.trial.hparams
steps, step_s, x = int(hp["steps"]), float(hp["step_s"]), float(hp.get("x", 0.0))

with det.core.init() as core:
    start = 0
    if info.latest_checkpoint:
        with core.checkpoint.restore_path(info.latest_checkpoint) as path:
            start = int((path / "state").read_text())
    for step in range(start + 1, steps + 1):
        time.sleep(step_s)
        loss = (x - 0.3) ** 2 + 1.0 / step
        core.train.report_validation_metrics(
            steps_completed=step, metrics={"loss": loss, "batches": step}
        )
        with core.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
            (path / "state").write_text(str(step))
        print(f"step {step}", flush=True)
        if core.preempt.should_preempt():
            print(f"preempted at step {step}", flush=True)
            sys.exit(0)
