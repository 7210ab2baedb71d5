"""A 2-slot DDP trial on `det deploy local` with two agents of one CPU slot each.

The experiment's entrypoint is Determined's `python3 -m determined.launch.torch_distributed
python3 train.py`; the master runs it as harness.launch.torch_distributed, whose two containers
(one per agent) meet at the master's rendezvous and start one torch.distributed worker each
(gloo). The trial must span both agents, complete, and end at the loss a single process reaches
on the same global batches (DDP averages the two workers' gradients of equal halves).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import REPO, Deploy, wait_for

pytestmark = pytest.mark.slow
pytest.importorskip("torch")

SCRIPT_DIR = Path(__file__).resolve().parent / "ddp_script"
TOLERANCE = 1e-4  # relative: float summation order differs between 1 and 2 workers


def single_process_loss(tmp_path: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    env.pop("WORLD_SIZE", None)
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, str(SCRIPT_DIR / "train.py")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (value,) = re.findall(r"^FINAL_LOSS (\S+)$", done.stdout, re.MULTILINE)
    return float(value)


def test_two_slot_ddp_trial_spans_two_agents_and_matches_one_process(
    deploy: Deploy, tmp_path: Path
) -> None:
    d = deploy(agents=2, slots=1, runtime="process")
    config = {
        "name": "e2e-ddp",
        "entrypoint": "python3 -m determined.launch.torch_distributed python3 train.py",
        "resources": {"slots_per_trial": 2},
        "searcher": {"name": "single", "metric": "final_loss", "max_length": {"batches": 24}},
        "max_restarts": 0,
    }
    exp_id = d.create_experiment(config, SCRIPT_DIR, tmp_path)
    trial = d.trial_of(exp_id)
    done = d.wait_trial_state(trial["id"], {"STATE_COMPLETED"}, timeout=300)
    logs = d.trial_logs(trial["id"])
    text = "\n".join(logs)

    (agents,) = re.findall(r"AGENTS (\S+)", text)
    assert len(set(agents.split(","))) == 2, text[-3000:]  # one worker on each agent
    assert "node 0 of 2" in text and "node 1 of 2" in text, text[-3000:]
    (value,) = re.findall(r"FINAL_LOSS (\S+)", text)
    distributed = float(value)
    reported = done["latestValidation"]["metrics"]["avgMetrics"]["final_loss"]
    assert reported == pytest.approx(distributed, rel=1e-6)
    assert distributed == pytest.approx(single_process_loss(tmp_path), rel=TOLERANCE)
    wait_for(
        lambda: d.get(f"/api/v1/experiments/{exp_id}")["experiment"]["state"] == "STATE_COMPLETED",
        30,
        f"experiment {exp_id} COMPLETED",
    )
