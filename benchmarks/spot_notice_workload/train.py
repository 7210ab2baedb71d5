"""Workload of benchmarks/spot_notice.py: steps of `step_s` seconds with the Core API.

Each step reports loss = 1/step. Every `ckpt_every` steps, and at once when preempted, it saves
a checkpoint of `size_mib` MiB (one file, `state` beside it) and reports it; a preempted run
exits 0 and the next run starts from the latest checkpoint.
"""

import os
import sys
import time

import harness as det

info = det.get_cluster_info()
hp = info.trial.hparams
steps, step_s = int(hp["steps"]), float(hp["step_s"])
ckpt_every, size_mib = int(hp["ckpt_every"]), int(hp["size_mib"])
# Random bytes, written over and over: nothing on the way can shrink them.
CHUNK = os.urandom(min(size_mib, 64) << 20)


def save(core, step):
    with core.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
        left = size_mib << 20
        with open(path / "blob", "wb") as out:
            while left > 0:
                left -= out.write(CHUNK[: min(left, len(CHUNK))])
        (path / "state").write_text(str(step))
    print(f"checkpoint at step {step}", flush=True)


with det.core.init() as core:
    start = 0
    if info.latest_checkpoint:
        with core.checkpoint.restore_path(info.latest_checkpoint) as path:
            start = int((path / "state").read_text())
    print(f"started at step {start} (run {info.trial.trial_run_id})", flush=True)
    for step in range(start + 1, steps + 1):
        time.sleep(step_s)
        core.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
        if step % ckpt_every == 0:
            save(core, step)
        if core.preempt.should_preempt():
            if step % ckpt_every:
                save(core, step)
            print(f"preempted at step {step}", flush=True)
            sys.exit(0)
