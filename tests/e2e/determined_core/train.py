"""A trial written against the real determined==0.38.1 Core API, run by tests/e2e/
test_determined_in_container.py with that package's own interpreter (not our harness).

It trains STEPS steps, reporting training metrics each step and checking for preemption; when
preempted it checkpoints its step and exits; started again, it restores from
``core.info.latest_checkpoint``; at the end it reports a validation metric and a checkpoint.

In a docker task the real package finds its files where it always looks, /run/determined/info.
On the process runtime there is no /run/determined and the package has no variable to look
elsewhere, so the script hands it the same files from $DET_RUN_DIR/info through Determined's
injection point, and names the shared_fs host path itself (there is no /determined_shared_fs).
"""

import json
import os
import pathlib
import time

import determined as det
from determined import _info, core

STEPS = int(os.environ.get("TRAIN_STEPS", "30"))
STEP_S = float(os.environ.get("TRAIN_STEP_S", "0.25"))
IN_CONTAINER = os.environ.get("DET_RUN_DIR") == "/run/determined"


def info_from_run_dir() -> None:
    here = pathlib.Path(os.environ["DET_RUN_DIR"]) / "info"
    info = det.ClusterInfo._from_file(str(here / "cluster.json"))
    info._trial_info = det.TrialInfo._from_file(str(here / "trial.json"))
    info._rendezvous_info = det.RendezvousInfo._from_file(str(here / "rendezvous.json"))
    info._resources_info = det.ResourcesInfo._from_file(str(here / "resources.json"))
    _info._info = info


def main() -> None:
    info_dir = pathlib.Path(os.environ["DET_RUN_DIR"]) / "info"
    print("info files: " + " ".join(sorted(p.name for p in info_dir.iterdir())), flush=True)
    storage = None
    if not IN_CONTAINER:
        info_from_run_dir()
        storage = json.loads((info_dir / "trial.json").read_text())["config"]
        storage = storage["checkpoint_storage"]["host_path"]
    info = det.get_cluster_info()
    assert info is not None, "the real determined package found no cluster info"
    print(f"cluster info: trial {info.trial.trial_id} run {info.trial._trial_run_id}", flush=True)

    with core.init(checkpoint_storage=storage, tensorboard_mode=core.TensorboardMode.MANUAL) as ctx:
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
