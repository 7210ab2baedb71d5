"""Python-object collectives for `harness.core.DistributedContext`, on torch.distributed.

`DistributedContext` (standard library only) imports this module lazily when a trial has more
than one worker. Objects travel through torch.distributed's own object collectives
(``all_gather_object``, ``gather_object``, ``broadcast_object_list``) on gloo process groups:
objects live on the CPU, so the groups are gloo even when the training itself uses NCCL.

Groups:
- one global gloo group over all workers;
- one gloo group per node (the workers with the same ``cross_rank``) for the ``_local`` forms.

When the program has already called ``torch.distributed.init_process_group`` (any backend), the
groups are new groups of that default group, and the default group is left to the program. When
it has not, this module initialises the default group itself and destroys it again in
`close()`: under torch.distributed's launcher from its environment (``env://``, NCCL where CUDA
is available, as Determined's ``pytorch.init`` would, so Determined code that builds
``DistributedContext.from_torch_distributed()`` before ``pytorch.init`` runs as is); otherwise
gloo on a TCP store on the chief at ``chief_ip:port``. Creating these groups is a collective:
every worker constructs its DistributedContext, in the same order relative to other collectives.
"""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Mapping
from typing import Any

import torch
import torch.distributed as dist

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)
CLOSE_TIMEOUT = datetime.timedelta(seconds=60)
logger = logging.getLogger("harness.core")


class TorchCollectives:
    """The collectives of one worker; every method is a collective over its group."""

    def __init__(
        self,
        *,
        rank: int,
        size: int,
        local_rank: int,
        local_size: int,
        cross_rank: int,
        chief_ip: str,
        port: int,
        timeout: datetime.timedelta = DEFAULT_TIMEOUT,
    ) -> None:
        self._owns_default = False
        if not dist.is_available():
            raise RuntimeError("this torch build has no torch.distributed")
        if not dist.is_initialized():
            launched = _torch_launcher_env(rank, size)
            dist.init_process_group(
                # Under torch.distributed's launcher, the group the training will use (as
                # Determined's pytorch.init would make it); else a gloo group for objects only.
                backend="nccl" if launched and torch.cuda.is_available() else "gloo",
                # torchrun's workers join its store at MASTER_ADDR:MASTER_PORT (with
                # TORCHELASTIC_USE_AGENT_STORE even rank 0 is only a client there): a store at
                # any other address would be waited for until the timeout.
                init_method="env://" if launched else f"tcp://{_host(chief_ip)}:{port}",
                rank=rank,
                world_size=size,
                timeout=timeout,
            )
            self._owns_default = True
        torch_rank, torch_size = dist.get_rank(), dist.get_world_size()
        if (torch_rank, torch_size) != (rank, size):
            raise ValueError(
                f"DistributedContext says rank {rank} of {size} but torch.distributed's default "
                f"group says rank {torch_rank} of {torch_size}; build the DistributedContext "
                "from the same environment (DistributedContext.from_torch_distributed())"
            )
        self.rank = rank
        self._global = dist.new_group(backend="gloo", timeout=timeout)
        # Which worker is on which node, as the workers say: (rank, cross_rank, local_rank).
        everyone: list[Any] = [None] * size
        dist.all_gather_object(everyone, (rank, cross_rank, local_rank), group=self._global)
        nodes: dict[int, list[tuple[int, int]]] = {}
        for r, node, local in everyone:
            nodes.setdefault(node, []).append((local, r))
        self._local = None
        self._local_ranks: list[int] = []  # global ranks on this node, ordered by local rank
        for node in sorted(nodes):  # every worker creates every node's group, in one order
            members = sorted(nodes[node])
            locals_ = [local for local, _ in members]
            if locals_ != list(range(len(members))):
                raise ValueError(
                    f"node {node} has local ranks {locals_}; they must be 0..{len(members) - 1}"
                )
            group = dist.new_group(ranks=[r for _, r in members], backend="gloo", timeout=timeout)
            if node == cross_rank:
                self._local = group
                self._local_ranks = [r for _, r in members]
        if len(self._local_ranks) != local_size:
            raise ValueError(
                f"local_size is {local_size} but {len(self._local_ranks)} workers report "
                f"cross_rank {cross_rank}"
            )

    # global

    def gather(self, stuff: Any) -> list[Any] | None:
        out: list[Any] | None = (
            [None] * dist.get_world_size(self._global) if self.rank == 0 else None
        )
        dist.gather_object(stuff, out, group=self._global, group_dst=0)
        return out

    def allgather(self, stuff: Any) -> list[Any]:
        out: list[Any] = [None] * dist.get_world_size(self._global)
        dist.all_gather_object(out, stuff, group=self._global)
        return out

    def broadcast(self, stuff: Any) -> Any:
        box = [stuff]
        dist.broadcast_object_list(box, group=self._global, group_src=0)
        return box[0]

    # local (this node's workers, in local-rank order)

    def _local_order(self, by_group_rank: list[Any]) -> list[Any]:
        # A group's ranks are its members' global ranks in ascending order.
        position = {r: i for i, r in enumerate(sorted(self._local_ranks))}
        return [by_group_rank[position[r]] for r in self._local_ranks]

    def gather_local(self, stuff: Any) -> list[Any] | None:
        chief = self._local_ranks[0]
        n = len(self._local_ranks)
        out: list[Any] | None = [None] * n if self.rank == chief else None
        dist.gather_object(stuff, out, dst=chief, group=self._local)
        return self._local_order(out) if out is not None else None

    def allgather_local(self, stuff: Any) -> list[Any]:
        out: list[Any] = [None] * len(self._local_ranks)
        dist.all_gather_object(out, stuff, group=self._local)
        return self._local_order(out)

    def broadcast_local(self, stuff: Any) -> Any:
        box = [stuff]
        dist.broadcast_object_list(box, src=self._local_ranks[0], group=self._local)
        return box[0]

    def close(self) -> None:
        if not dist.is_initialized():
            return
        try:  # nobody tears its groups down under a peer's feet; a vanished peer is not waited on
            dist.monitored_barrier(group=self._global, timeout=CLOSE_TIMEOUT)
        except RuntimeError as exc:
            logger.warning("closing the DistributedContext without every worker: %s", exc)
        for group in (self._local, self._global):
            if group is not None:
                dist.destroy_process_group(group)
        self._local = None
        if self._owns_default:
            dist.destroy_process_group()
            self._owns_default = False


def _torch_launcher_env(rank: int, size: int, env: Mapping[str, str] | None = None) -> bool:
    """True when this worker was started by torch.distributed's launcher for these ranks."""
    e = os.environ if env is None else env
    return (
        bool(e.get("MASTER_ADDR"))
        and bool(e.get("MASTER_PORT"))
        and e.get("RANK") == str(rank)
        and e.get("WORLD_SIZE") == str(size)
    )


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address and not address.startswith("[") else address
