"""One worker of the multi-process preemption test: real collectives (torch.distributed gloo).

The "master" is an in-process stub: the first poll says no, the first long poll says yes after
a moment. Every rank calls ``should_preempt()`` in a loop; prints the loop index at which it
first saw True and how many acks this process sent.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from harness.core import DistributedContext, PreemptContext, PreemptMode


class Stub:
    def __init__(self) -> None:
        self.acks = 0
        self.polls = 0

    def request(self, method: str, path: str, **kw: Any) -> Any:
        if path.endswith("/ack_preemption"):
            self.acks += 1
            return {}
        self.polls += 1
        if self.polls == 1:
            return {"preempt": False}
        time.sleep(0.3)
        return {"preempt": True}


def main(mode: str) -> None:
    e = os.environ
    dist = DistributedContext(
        rank=int(e["RANK"]),
        size=int(e["WORLD_SIZE"]),
        local_rank=int(e["RANK"]),
        local_size=int(e["WORLD_SIZE"]),
        cross_rank=0,
        cross_size=1,
        pub_port=int(e["STORE_PORT"]),
    )
    stub = Stub()
    ctx = PreemptContext(stub, "alloc", dist, PreemptMode(mode)).start()  # type: ignore[arg-type]
    seen_at = None
    for i in range(500):
        if ctx.should_preempt():
            seen_at = i
            break
        time.sleep(0.005)
    ctx.close()
    dist.close()
    print("RESULT " + json.dumps({"seen_at": seen_at, "acks": stub.acks}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
