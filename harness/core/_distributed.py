"""DistributedContext: who this worker is among the trial's workers.

For now every task is one worker (rank 0 of 1); the collectives are the trivial single-worker
ones. Multi-worker collectives ride on torch.distributed and arrive with issue 5.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


class DistributedContext:
    """Rank information and simple collectives (Determined's signature)."""

    def __init__(
        self,
        *,
        rank: int,
        size: int,
        local_rank: int,
        local_size: int,
        cross_rank: int,
        cross_size: int,
        chief_ip: str | None = None,
        pub_port: int = 12360,
        pull_port: int = 12376,
        port_offset: int = 0,
        force_tcp: bool = False,
    ) -> None:
        if not 0 <= rank < size or not 0 <= local_rank < local_size:
            raise ValueError(f"invalid ranks: rank {rank} of {size}, local {local_rank}")
        if cross_size > 1 and not chief_ip:
            raise ValueError("chief_ip is required when cross_size > 1")
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size
        self.cross_rank = cross_rank
        self.cross_size = cross_size
        self.chief_ip = chief_ip
        self._pub_port = pub_port + port_offset
        self._pull_port = pull_port + port_offset
        self._force_tcp = force_tcp

    @classmethod
    def from_torch_distributed(
        cls, chief_ip: str | None = None, env: Mapping[str, str] | None = None
    ) -> DistributedContext:
        """Ranks from torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, ...)."""
        e = os.environ if env is None else env
        size = int(e["WORLD_SIZE"])
        local_size = int(e["LOCAL_WORLD_SIZE"])
        return cls(
            rank=int(e["RANK"]),
            size=size,
            local_rank=int(e["LOCAL_RANK"]),
            local_size=local_size,
            cross_rank=int(e.get("GROUP_RANK", "0")),
            cross_size=size // local_size,
            chief_ip=chief_ip or e.get("DET_CHIEF_IP") or e.get("MASTER_ADDR"),
        )

    def get_rank(self) -> int:
        return self.rank

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_size(self) -> int:
        return self.size

    def get_local_size(self) -> int:
        return self.local_size

    def get_cross_rank(self) -> int:
        return self.cross_rank

    def get_cross_size(self) -> int:
        return self.cross_size

    def get_num_agents(self) -> int:
        return self.cross_size

    def _single(self, what: str) -> None:
        if self.size > 1:
            raise NotImplementedError(
                f"{what} across {self.size} workers needs torch.distributed support (issue 5)"
            )

    def gather(self, stuff: Any) -> list[Any] | None:
        self._single("gather")
        return [stuff]

    def gather_local(self, stuff: Any) -> list[Any] | None:
        self._single("gather_local")
        return [stuff]

    def allgather(self, stuff: Any) -> list[Any]:
        self._single("allgather")
        return [stuff]

    def allgather_local(self, stuff: Any) -> list[Any]:
        self._single("allgather_local")
        return [stuff]

    def broadcast(self, stuff: Any) -> Any:
        self._single("broadcast")
        return stuff

    def broadcast_local(self, stuff: Any = None) -> Any:
        self._single("broadcast_local")
        return stuff

    def close(self) -> None:
        return None


class DummyDistributedContext(DistributedContext):
    """One worker: rank 0 of 1."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)
