"""End-to-end workload: N steps of `step_s` seconds with the Core API.

Reports a training metric each step, checkpoints every `ckpt_every` steps and when preempted,
resumes from the latest checkpoint, and says what it does on stdout so the tests can read the
trial's logs: `started at step S (run R)`, `step N`, `checkpoint at step N`, `preempted at step
N`, `done`. With `exit_delay_s`, it takes that long to exit after its last checkpoint on a
preemption (a script that cleans up), so a machine can die between the two.
"""

import sys
import time

import harness as det

info = det.get_cluster_info()
hp = info.trial.hparams
steps, step_s, ckpt_every = int(hp["steps"]), float(hp["step_s"]), int(hp["ckpt_every"])
exit_delay_s = float(hp.get("exit_delay_s", 0))


def save(core, step):
    with core.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
        (path / "state").write_text(str(step))
    print(f"checkpoint at step {step}", flush=True)


# One process on all of a multi-slot trial's slots (as with DataParallel): no peers to meet.
distributed = det.core.DummyDistributedContext() if len(info.slot_ids) > 1 else None

with det.core.init(distributed=distributed) as core:
    start = 0
    if info.latest_checkpoint:
        with core.checkpoint.restore_path(info.latest_checkpoint) as path:
            start = int((path / "state").read_text())
    print(f"started at step {start} (run {info.trial.trial_run_id})", flush=True)
    for step in range(start + 1, steps + 1):
        time.sleep(step_s)
        core.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
        print(f"step {step}", flush=True)
        if step % ckpt_every == 0:
            save(core, step)
        if core.preempt.should_preempt():
            if step % ckpt_every:
                save(core, step)
            print(f"preempted at step {step}", flush=True)
            time.sleep(exit_delay_s)
            sys.exit(0)
    print("done", flush=True)
