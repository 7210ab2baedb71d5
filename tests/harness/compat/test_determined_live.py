"""Code written for Determined, unchanged, as a task of a live master with only our pylib.

A fake agent holds the trial's allocation; the task is a plain process with the environment the
agent gives it and pylib (as the agent builds it) first on PYTHONPATH. The script imports
``determined``, reports through ``det.core.init()``, stores a checkpoint, and uses
``determined.experimental.client`` from inside the task (the task's own token) to find its
experiment, trial and checkpoint and to download that checkpoint. Off the task, the client logs
in as a user, creates an experiment from a model directory, and waits for it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PASSWORD
from tests.harness.compat.conftest import clean_env, run_python
from tests.harness.live import place_trial, task_env
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import StartMaster, eventually

pytestmark = pytest.mark.slow

CONFIG = """
name: determined-as-is
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: 10, smaller_is_better: true}
checkpoint_storage: {type: shared_fs, host_path: HOST}
resources: {slots_per_trial: 1}
max_restarts: 0
"""

TRAIN = r"""
import json, logging, pathlib, sys
import determined as det
from determined import core
from determined.experimental import client

logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
info = det.get_cluster_info()
with core.init(tensorboard_mode=core.TensorboardMode.MANUAL) as ctx:
    ctx.train.report_training_metrics(steps_completed=5, metrics={"loss": 0.5})
    ctx.train.report_validation_metrics(steps_completed=5, metrics={"loss": 0.25})
    with ctx.checkpoint.store_path({"steps_completed": 5}) as (path, uuid):
        (path / "state.json").write_text(json.dumps({"step": 5}))
    ctx.train.get_experiment_best_validation()  # the reports above are on the master now

exp = client.get_experiment(info.trial.experiment_id)
trials = exp.list_trials()
best = exp.top_checkpoint()
downloaded = pathlib.Path(best.download(str(pathlib.Path.cwd() / "downloaded")))
print(json.dumps({
    "det": det.__file__,
    "trial": info.trial.trial_id,
    "exp_state": exp.state.name,
    "trials": [t.id for t in trials],
    "uuid": uuid,
    "best": best.uuid,
    "listed": [c.uuid for c in trials[0].list_checkpoints()],
    "state": json.loads((downloaded / "state.json").read_text()),
    "metrics": [m.metrics for m in trials[0].iter_metrics("validation")],
}))
"""


async def test_a_determined_script_runs_unchanged_as_a_task(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path, pylib: Path
) -> None:
    m = await start_master()
    config = CONFIG.replace("HOST", str(tmp_path / "ckpt"))
    exp, start, _agent = await place_trial(m, agents, config, {"train.py": TRAIN.encode()})
    env = task_env(m, start, tmp_path / "work")
    env["PYTHONPATH"] = str(pylib)  # as the agent runs tasks: pylib only, not the repository
    env["DET_RUN_DIR"] = str(tmp_path)  # the process runtime's run dir (no info/ here)
    (tmp_path / "work" / "train.py").write_text(TRAIN)
    out = await asyncio.to_thread(run_python, sys.executable, TRAIN, env, tmp_path / "work", 180)
    assert out.returncode == 0, out.stderr[-4000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["det"].startswith(str(pylib))
    trial = (await m.get(f"/api/v1/experiments/{exp['id']}/trials"))["trials"][0]
    assert got["trial"] == trial["id"] and got["trials"] == [trial["id"]]
    assert got["exp_state"] == "RUNNING"  # ACTIVE, shown by its running allocation
    assert got["best"] == got["uuid"] and got["listed"] == [got["uuid"]]
    assert got["state"] == {"step": 5}
    assert got["metrics"] == [{"loss": 0.25}]
    assert "INFO: [" in out.stderr  # det.LOG_FORMAT


def _client_session(m: Any, model_dir: Path) -> dict[str, Any]:
    """Off the cluster: log in as a user, create an experiment, find it, kill it, wait."""
    from harness.experimental import client

    d = client.login(master=m.url, user="admin", password=PASSWORD)
    exp = d.create_experiment(
        {
            "name": "from-the-client",
            "entrypoint": "python3 train.py",
            "searcher": {"name": "single", "metric": "loss", "max_length": 10},
            "resources": {"slots_per_trial": 1},
        },
        model_dir,
    )
    found = [e.id for e in d.list_experiments(name="from-the-client")]
    archive = Path(exp.download_code(str(model_dir.parent / "code")))
    exp.set_labels(["a"])
    exp.add_label("b")
    exp.kill()
    state = exp.wait(interval=0.2)
    client.logout()
    return {"id": exp.id, "found": found, "archive": archive, "state": state.name, "exp": exp}


async def test_the_client_creates_finds_and_waits_for_an_experiment(
    start_master: StartMaster, tmp_path: Path
) -> None:
    m = await start_master()
    model_dir = tmp_path / "model"
    (model_dir / "data").mkdir(parents=True)
    (model_dir / "train.py").write_text("print('hi')\n")
    (model_dir / "data" / "big.bin").write_bytes(b"x" * 100)
    (model_dir / ".detignore").write_text("data/\n")
    got = await asyncio.to_thread(_client_session, m, model_dir)
    assert got["found"] == [got["id"]]
    assert got["state"] in ("CANCELED", "COMPLETED")
    assert got["exp"].labels == ["a", "b"]
    import tarfile

    with tarfile.open(got["archive"]) as tar:
        names = sorted(n.lstrip("./") for n in tar.getnames() if n.strip("./"))
    assert "train.py" in names and not any(n.startswith("data") for n in names)

    async def canceled() -> bool:
        e = (await m.get(f"/api/v1/experiments/{got['id']}"))["experiment"]
        return e["state"] in ("STATE_CANCELED", "STATE_COMPLETED")

    await eventually(canceled, timeout=10)


def test_a_task_without_its_cluster_info_fails_loudly(pylib: Path, tmp_path: Path) -> None:
    code = (
        "import determined as det\n"
        "from determined import core\n"
        "with core.init() as ctx:\n"
        "    print('off-cluster: must not happen')\n"
    )
    env = clean_env(PYTHONPATH=str(pylib), DET_TASK_ID="task-1", DET_RUN_DIR=str(tmp_path))
    out = run_python(sys.executable, code, env, cwd=tmp_path)
    assert out.returncode == 1
    assert "must not happen" not in out.stdout
    assert "NotOnCluster" in out.stderr and "found no cluster info" in out.stderr
    assert "DET_MASTER" in out.stderr and str(tmp_path / "info" / "cluster.json") in out.stderr
