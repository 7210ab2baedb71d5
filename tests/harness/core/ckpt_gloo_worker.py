"""One worker process of the sharded-checkpoint gloo test: saves its shard, prints the outcome.

argv: STORE_DIR SRC_DIR; ranks from RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE, the gloo store
on 127.0.0.1:STORE_PORT.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import harness as det
from harness.core._checkpoint import CheckpointConflict, CheckpointContext
from harness.core._storage import DirectoryStorageManager


def main(store_dir: str, src_dir: str) -> None:
    e = os.environ
    dist = det.core.DistributedContext(
        rank=int(e["RANK"]),
        size=int(e["WORLD_SIZE"]),
        local_rank=int(e["LOCAL_RANK"]),
        local_size=int(e["LOCAL_WORLD_SIZE"]),
        cross_rank=0,
        cross_size=1,
        chief_ip="127.0.0.1",
        pub_port=int(e["STORE_PORT"]),
    )
    ckpt = CheckpointContext(dist, DirectoryStorageManager(Path(store_dir)), None, "t", None)
    mine = Path(src_dir) / f"rank{dist.rank}"
    mine.mkdir(parents=True)
    (mine / f"shard{dist.rank}.bin").write_bytes(bytes([dist.rank]) * 10)
    out: dict = {"rank": dist.rank}
    out["upload"] = ckpt.upload(mine, {"steps_completed": 3, f"r{dist.rank}": 1}, shard=True)
    with ckpt.store_path({"steps_completed": 4}, shard=True) as (path, sid):
        (path / f"part{dist.rank}").write_text("x")
    out["store_path"] = sid
    (mine / "clash.bin").write_bytes(bytes([dist.rank]))
    try:
        ckpt.upload(mine, {"steps_completed": 5}, shard=True)
    except CheckpointConflict as exc:
        out["conflict"] = str(exc)
    with ckpt.restore_path(out["upload"]) as path:
        out["restored"] = sorted(p.name for p in path.iterdir())
    dist.close()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
