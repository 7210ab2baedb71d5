"""One worker of a 2-process DDP run of harness.pytorch off a cluster (test_distributed.py).

argv: OUT_JSON. The environment has torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Each worker writes its per-batch local losses.
"""

from __future__ import annotations

import json
import sys

import torch.distributed as dist

from harness import core, pytorch
from tests.harness.pytorch.test_distributed import HPARAMS, LinearTrial

if __name__ == "__main__":
    dist.init_process_group("gloo")
    try:
        distributed = core.DistributedContext.from_torch_distributed()
        with pytorch.init(hparams=HPARAMS, distributed=distributed) as context:
            trial = LinearTrial(context)
            pytorch.Trainer(trial, context).fit(
                max_length=pytorch.Batch(12),
                reporting_period=pytorch.Batch(4),
                checkpoint_period=pytorch.Batch(6),
            )
        with open(sys.argv[1], "w") as f:
            json.dump({"losses": trial.losses, "ddp": type(trial.model).__name__}, f)
    finally:
        dist.destroy_process_group()
