"""End-to-end DDP workload: a small MLP on synthetic regression data with the Core API.

Under ``python3 -m determined.launch.torch_distributed python3 train.py`` every slot runs this
script: gloo process group, DistributedDataParallel, each worker trains on its share of each
global batch. Run as one plain process (no WORLD_SIZE) it trains on the whole global batch
itself, so both runs compute the same updates (DDP averages the workers' gradients of equal
shares) and end at the same loss up to float rounding.

Prints ``FINAL_LOSS <x>`` (the loss on the whole data set after training) and, on the chief,
``AGENTS <a,b>`` (which agent each worker ran on).
"""

import os

import torch
import torch.distributed as dist
from torch import nn

import harness as det

SEED = 1234
SAMPLES, FEATURES = 512, 8
GLOBAL_BATCH = 32
STEPS = 24
LR = 0.05


def data():
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(SAMPLES, FEATURES, generator=g)
    w = torch.randn(FEATURES, 1, generator=g)
    y = torch.sin(x @ w) + 0.05 * torch.randn(SAMPLES, 1, generator=g)
    return x, y


def model():
    torch.manual_seed(SEED)
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.Tanh(), nn.Linear(32, 1))


def main():
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
        context = det.core.DistributedContext.from_torch_distributed()
    else:
        context = None
    rank = context.rank if context else 0
    size = context.size if context else 1
    if GLOBAL_BATCH % size:
        raise SystemExit(f"global batch {GLOBAL_BATCH} does not split over {size} workers")
    share = GLOBAL_BATCH // size
    x, y = data()
    net = model()
    trained = nn.parallel.DistributedDataParallel(net) if distributed else net
    opt = torch.optim.SGD(trained.parameters(), lr=LR)
    loss_fn = nn.MSELoss()
    with det.core.init(distributed=context) as core:
        agents = core.distributed.allgather(os.environ.get("DET_AGENT_ID", "local"))
        if rank == 0:
            print("AGENTS " + ",".join(agents), flush=True)
        for step in range(1, STEPS + 1):
            start = ((step - 1) * GLOBAL_BATCH) % SAMPLES + rank * share
            xb, yb = x[start : start + share], y[start : start + share]
            opt.zero_grad()
            loss = loss_fn(trained(xb), yb)
            loss.backward()
            opt.step()
            losses = core.distributed.gather(loss.item())
            if rank == 0:
                core.train.report_training_metrics(
                    steps_completed=step, metrics={"loss": sum(losses) / len(losses)}
                )
            if core.preempt.should_preempt():
                print(f"preempted at step {step}", flush=True)
                return
        with torch.no_grad():
            final = float(loss_fn(net(x), y))
        if rank == 0:
            core.train.report_validation_metrics(
                steps_completed=STEPS, metrics={"final_loss": final}
            )
            print(f"FINAL_LOSS {final:.10f}", flush=True)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
