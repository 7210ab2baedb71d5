"""Two workers under DDP (gloo on 127.0.0.1) train like one process with the global batch."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

from harness import pytorch

REPO = Path(__file__).resolve().parents[3]
HPARAMS = {"global_batch_size": 16}


def data() -> torch.utils.data.TensorDataset:
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(96, 5, generator=gen)
    return torch.utils.data.TensorDataset(x, x @ torch.arange(1.0, 6.0).unsqueeze(1))


class LinearTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        torch.manual_seed(0)  # the same initial weights on every worker and in the single run
        self.model = context.wrap_model(nn.Linear(5, 1))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.05))
        self.losses: list[float] = []

    def build_training_data_loader(self) -> Any:
        bs = self.context.get_per_slot_batch_size()
        return pytorch.DataLoader(data(), batch_size=bs, shuffle=True)

    def build_validation_data_loader(self) -> Any:
        return pytorch.DataLoader(data(), batch_size=32)

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Any:
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        self.losses.append(loss.item())
        return loss

    def evaluate_batch(self, batch: Any) -> dict[str, Any]:
        x, y = batch
        return {"validation_loss": nn.functional.mse_loss(self.model(x), y)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_ddp_workers_match_one_process_with_the_global_batch(
    tmp_path: Path, off_cluster: Path
) -> None:
    with pytorch.init(hparams=HPARAMS) as context:
        single = LinearTrial(context)
        pytorch.Trainer(single, context).fit(
            max_length=pytorch.Batch(12), reporting_period=pytorch.Batch(4)
        )

    port = str(free_port())
    procs = []
    for rank in range(2):
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "XDG_DATA_HOME": str(tmp_path / "ddp-data"),
            "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
        }  # fmt: skip
        argv = [sys.executable, "-m", "tests.harness.pytorch.ddp_worker", f"{tmp_path}/{rank}.json"]
        procs.append(
            subprocess.Popen(
                argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
        )
    for p in procs:
        out, _ = p.communicate(timeout=180)
        assert p.returncode == 0, out.decode()[-3000:]
    ranks = [json.loads((tmp_path / f"{r}.json").read_text()) for r in range(2)]
    assert {r["ddp"] for r in ranks} == {"DistributedDataParallel"}
    assert len(ranks[0]["losses"]) == len(ranks[1]["losses"]) == 12
    for i, whole in enumerate(single.losses):  # each worker holds half of the global batch
        halves = (ranks[0]["losses"][i] + ranks[1]["losses"][i]) / 2
        assert abs(halves - whole) <= 1e-4 * max(1.0, whole), (i, halves, whole)
    states = sorted((tmp_path / "ddp-data" / "determined").glob("*/state_dict.pth"))
    assert len(states) == 2  # the chief's, at batches 6 and 12
    for state in states:
        assert len(torch.load(state, weights_only=False)["rng_state"]) == 2  # every worker's
