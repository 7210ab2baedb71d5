"""A hand-made launcher, as Determined's Core API guide shows: one worker per slot on this
machine, each told its rank, all running core_train.py (which builds a DistributedContext)."""

import os
import subprocess
import sys

import determined as det


def main():
    info = det.get_cluster_info()
    assert info is not None, "this launcher only runs on-cluster"
    size = len(info.slot_ids)
    workers = []
    for rank in range(size):
        env = {**os.environ, "LAUNCHER_RANK": str(rank), "LAUNCHER_SIZE": str(size)}
        workers.append(subprocess.Popen([sys.executable, "core_train.py"], env=env))
    codes = [w.wait() for w in workers]
    print(f"workers exited {codes}", flush=True)
    sys.exit(max(codes))


if __name__ == "__main__":
    main()
