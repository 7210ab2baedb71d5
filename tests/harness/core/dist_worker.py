"""One worker of the DistributedContext tests: runs every collective, prints what it got (JSON).

argv: MODE, where MODE is
- ``own``: the program never calls init_process_group; the context (built with Determined's
  constructor) sets torch.distributed up itself, its TCP store on ``DET_CHIEF_IP:STORE_PORT``;
- ``user-init``: the program initialises torch.distributed first (as DDP code does), then
  builds the context from OpenMPI's variables (``from_deepspeed``);
- ``torchrun``: started by torch.distributed's launcher, the program builds the context with
  ``from_torch_distributed()`` before anything initialised torch.distributed.
"""

from __future__ import annotations

import json
import os
import sys

import harness as det


def main(mode: str) -> None:
    if mode == "user-init":
        import torch.distributed as dist

        dist.init_process_group("gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
        ctx = det.core.DistributedContext.from_deepspeed()
    elif mode == "torchrun":
        # Determined's Trainer examples: the context first, nothing initialised yet.
        ctx = det.core.DistributedContext.from_torch_distributed()
    else:
        e = os.environ
        ctx = det.core.DistributedContext(
            rank=int(e["RANK"]),
            size=int(e["WORLD_SIZE"]),
            local_rank=int(e["LOCAL_RANK"]),
            local_size=int(e["LOCAL_WORLD_SIZE"]),
            cross_rank=int(e["GROUP_RANK"]),
            cross_size=int(e["GROUP_WORLD_SIZE"]),
            chief_ip=e["DET_CHIEF_IP"],
            pub_port=int(e["STORE_PORT"]),
        )
    me = {"rank": ctx.rank, "local": ctx.local_rank, "node": ctx.cross_rank}
    out = {
        "me": me,
        "sizes": [ctx.get_size(), ctx.get_local_size(), ctx.get_num_agents()],
        "allgather": ctx.allgather(me),
        "gather": ctx.gather(ctx.rank * 10),
        "broadcast": ctx.broadcast({"from": ctx.rank}),
        "allgather_local": ctx.allgather_local(ctx.rank),
        "gather_local": ctx.gather_local(ctx.rank),
        "broadcast_local": ctx.broadcast_local(f"node{ctx.cross_rank}-rank{ctx.rank}"),
        # a second round: the groups are reusable and stay in step
        "again": ctx.allgather([ctx.rank] * ctx.rank),
        "big": len(ctx.broadcast("x" * 3_000_000 if ctx.rank == 0 else None)),
    }
    ctx.close()
    ctx.close()  # idempotent
    if mode == "user-init":
        import torch.distributed as dist

        out["still_initialised"] = dist.is_initialized()
        dist.destroy_process_group()
    line = "RESULT " + json.dumps(out)
    result_dir = os.environ.get("RESULT_DIR")
    if result_dir:
        # Workers that share one stdout (torchrun's) can interleave their lines there.
        with open(os.path.join(result_dir, f"rank-{ctx.rank}.txt"), "w") as f:
            f.write(line)
    else:
        print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
