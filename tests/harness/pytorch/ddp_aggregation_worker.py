"""One worker of a 2-process DDP run with aggregation_frequency 2 (test_aggregation.py).

argv: OUT_JSON. The environment has torchrun's variables. Each worker writes its final weights
and the batches at which DDP all-reduced gradients (a communication hook records them).
"""

from __future__ import annotations

import json
import sys

import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

from harness import core, pytorch
from tests.harness.pytorch.test_distributed import HPARAMS, LinearTrial

if __name__ == "__main__":
    dist.init_process_group("gloo")
    try:
        distributed = core.DistributedContext.from_torch_distributed()
        with pytorch.init(
            hparams=HPARAMS, distributed=distributed, aggregation_frequency=2
        ) as context:
            trial = LinearTrial(context)
            allreduces: list[int] = []

            def recording_hook(state, bucket):  # type: ignore[no-untyped-def]  # torch reads annotations
                allreduces.append(trial.context._current_batch_idx)
                return allreduce_hook(None, bucket)  # type: ignore[arg-type]

            trial.model.register_comm_hook(None, recording_hook)
            pytorch.Trainer(trial, context).fit(
                max_length=pytorch.Batch(8), reporting_period=pytorch.Batch(4)
            )
        weights = [p.detach().flatten().tolist() for p in trial.model.parameters()]
        with open(sys.argv[1], "w") as f:
            json.dump({"weights": weights, "allreduces": allreduces}, f)
    finally:
        dist.destroy_process_group()
