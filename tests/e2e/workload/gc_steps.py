"""End-to-end workload for checkpoint GC: one step per entry of `losses` (`step_s` seconds
each), a validation with that loss and a checkpoint at every step, so GC has best, latest and
neither to tell apart."""

import time

import harness as det

hp = det.get_cluster_info().trial.hparams
losses, step_s = [float(x) for x in hp["losses"]], float(hp["step_s"])

with det.core.init() as core:
    for step, loss in enumerate(losses, start=1):
        time.sleep(step_s)
        core.train.report_training_metrics(steps_completed=step, metrics={"loss": loss})
        core.train.report_validation_metrics(steps_completed=step, metrics={"loss": loss})
        with core.checkpoint.store_path({"steps_completed": step}) as (path, uuid):
            (path / "state").write_text(str(step))
        print(f"checkpoint {uuid} at step {step}", flush=True)
    print("done", flush=True)
