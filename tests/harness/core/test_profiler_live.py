"""A trial's profiler end to end: a Core API script run by the launcher with a real allocation
token turns the profiler on; its system metrics reach a live master and are served as
Determined's profiler series."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.live import place_trial, run_launcher, task_env
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import StartMaster

pytestmark = pytest.mark.slow

SCRIPT = b"""\
import time
import harness as det
with det.core.init() as core_context:
    core_context.profiler.on(sampling_interval=0.1, samples_per_report=2)
    time.sleep(1.0)  # some samples: reported every 2, the rest when the context closes
"""

CONFIG = """
name: profiled
entrypoint: python3 profiled.py
searcher: {name: single, metric: loss, max_length: 10}
profiling: {enabled: true}
max_restarts: 0
"""


async def test_system_metrics_reach_the_master(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path
) -> None:
    m = await start_master()
    exp, start, _ = await place_trial(m, agents, CONFIG, {"profiled.py": SCRIPT})
    ran = await run_launcher(list(start.spec.argv), task_env(m, start, tmp_path / "work"))
    assert ran.returncode == 0, ran.stderr.decode(errors="replace")[-2000:]

    trials = (await m.get(f"/api/v1/experiments/{exp['id']}/trials"))["trials"]
    trial_id = trials[0]["id"]
    r = await m.http.get(f"/api/v1/trials/{trial_id}/profiler/available_series", headers=m.admin)
    assert r.status_code == 200, r.text
    labels = json.loads(r.text.splitlines()[0])["result"]["labels"]
    names = {lab["name"] for lab in labels}
    assert {"cpu_util_simple", "memory_free", "disk_iops", "net_throughput_sent"} <= names
    assert {lab["agentId"] for lab in labels} == {"agent-1"}
    r = await m.http.get(
        f"/api/v1/trials/{trial_id}/profiler/metrics",
        params={"labels.name": "memory_free"},
        headers=m.admin,
    )
    [batch] = [json.loads(line)["result"]["batch"] for line in r.text.splitlines()]
    assert batch["values"] and all(v > 0 for v in batch["values"])
    assert batch["batches"] == list(range(1, len(batch["values"]) + 1))


TRIAL = b"""\
import time
import torch
from torch import nn
from harness import pytorch


def data(n):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 2, generator=g)
    return torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))


class ProfTrial(pytorch.PyTorchTrial):
    def __init__(self, context):
        self.context = context
        self.model = context.wrap_model(nn.Linear(2, 1))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))

    def build_training_data_loader(self):
        return pytorch.DataLoader(data(64), batch_size=self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self):
        return pytorch.DataLoader(data(16), batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch, epoch_idx, batch_idx):
        time.sleep(0.4)  # a few seconds of training: the profiler samples once a second
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss}

    def evaluate_batch(self, batch):
        x, y = batch
        return {"validation_loss": nn.functional.mse_loss(self.model(x), y)}
"""

TRIAL_CONFIG = """
name: profiled-pytorch
entrypoint: model_def:ProfTrial
hyperparameters: {global_batch_size: 8}
searcher: {name: single, metric: validation_loss, max_length: {batches: 8}}
min_validation_period: {batches: 8}
min_checkpoint_period: {batches: 8}
profiling: {enabled: true}
max_restarts: 0
"""


async def test_profiling_enabled_profiles_a_pytorch_trial(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path
) -> None:
    m = await start_master()
    exp, start, _ = await place_trial(m, agents, TRIAL_CONFIG, {"model_def.py": TRIAL})
    env = task_env(m, start, tmp_path / "work")
    ran = await run_launcher(list(start.spec.argv), env, timeout=300)
    assert ran.returncode == 0, ran.stderr.decode(errors="replace")[-3000:]
    trial_id = (await m.get(f"/api/v1/experiments/{exp['id']}/trials"))["trials"][0]["id"]
    r = await m.http.get(f"/api/v1/trials/{trial_id}/profiler/available_series", headers=m.admin)
    names = {lab["name"] for lab in json.loads(r.text.splitlines()[0])["result"]["labels"]}
    assert {"cpu_util_simple", "memory_free"} <= names
