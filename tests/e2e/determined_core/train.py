"""A trial written against the real determined==0.38.1 Core API, run by tests/e2e/
test_determined_in_container.py with that package's own interpreter (not our harness).

It trains STEPS steps, reporting training metrics each step and checking for preemption; when
preempted it checkpoints its step and exits; started again, it restores from
``core.info.latest_checkpoint``; at the end it reports a validation metric and a checkpoint.

It is plain Determined code: in a docker task the real package finds its files where it always
looks, /run/determined/info; on the process runtime the task's sitecustomize (pylib) points the
real package at $DET_RUN_DIR/info and its shared_fs storage at the host path.
"""

import json
import os
import pathlib
import time

import determined as det
from determined import core

STEPS = int(os.environ.get("TRAIN_STEPS", "30"))
STEP_S = float(os.environ.get("TRAIN_STEP_S", "0.25"))


def main() -> None:
    info_dir = pathlib.Path(os.environ["DET_RUN_DIR"]) / "info"
    print("info files: " + " ".join(sorted(p.name for p in info_dir.iterdir())), flush=True)
    info = det.get_cluster_info()
    assert info is not None, "the real determined package found no cluster info"
    print(f"cluster info: trial {info.trial.trial_id} run {info.trial._trial_run_id}", flush=True)

    with core.init(tensorboard_mode=core.TensorboardMode.MANUAL) as ctx:
        latest = ctx.info.latest_checkpoint
        start = 0
        if latest:
            with ctx.checkpoint.restore_path(latest) as path:
                start = json.loads((path / "state.json").read_text())["step"]
        print(f"started at step {start} from {latest}", flush=True)
        ctx.train.set_status("training")
        for step in range(start + 1, STEPS + 1):
            time.sleep(STEP_S)
            ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
            if ctx.preempt.should_preempt():
                with ctx.checkpoint.store_path({"steps_completed": step}) as (path, uuid):
                    (path / "state.json").write_text(json.dumps({"step": step}))
                print(f"preempted at step {step}, checkpoint {uuid}", flush=True)
                return
        ctx.train.report_validation_metrics(steps_completed=STEPS, metrics={"loss": 1.0 / STEPS})
        with ctx.checkpoint.store_path({"steps_completed": STEPS}) as (path, uuid):
            (path / "state.json").write_text(json.dumps({"step": STEPS}))
        print(f"done, checkpoint {uuid}", flush=True)


if __name__ == "__main__":
    main()
