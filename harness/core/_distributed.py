"""DistributedContext: who this worker is among the trial's workers, and simple collectives.

Names, signatures and semantics follow Determined 0.38.1's ``determined.core.DistributedContext``.
Determined moves objects between workers with ZMQ; here the collectives ride on
torch.distributed (gloo process groups, see `harness.pytorch._collectives`), which is imported
only when a context has more than one worker: a single worker needs nothing but the standard
library.

Constructing a context with ``size > 1`` is itself a collective: every worker must construct
its context (it sets up the process groups), as in Determined.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

# Determined's constants.INTER_TRAIN_PROCESS_COMM_PORT_1/_2. The first one is the port of the
# TCP store on the chief when torch.distributed is not initialised by the program itself.
DEFAULT_PUB_PORT = 12360
DEFAULT_PULL_PORT = 12376


class DistributedContext:
    """Rank information and simple collectives (Determined's signature).

    - rank: the index of this worker in the entire job
    - size: the number of workers in the entire job
    - local_rank: the index of this worker on this machine
    - local_size: the number of workers on this machine
    - cross_rank: the index of this machine in the entire job
    - cross_size: the number of machines in the entire job
    - chief_ip: the address of the chief (rank 0); required whenever local_size != size

    ``gather``/``allgather``/``broadcast`` (and their ``_local`` forms) move small picklable
    Python objects; they are not a replacement for your training framework's tensor collectives.
    """

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
        pub_port: int = DEFAULT_PUB_PORT,
        pull_port: int = DEFAULT_PULL_PORT,
        port_offset: int = 0,
        force_tcp: bool = False,
    ) -> None:
        for name, value in (
            ("rank", rank),
            ("size", size),
            ("local_rank", local_rank),
            ("local_size", local_size),
            ("cross_rank", cross_rank),
            ("cross_size", cross_size),
        ):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, not {value!r}")
        if not (0 <= rank < size and 0 <= local_rank < local_size and 0 <= cross_rank < cross_size):
            raise ValueError(
                f"invalid ranks: rank {rank} of {size}, local rank {local_rank} of {local_size}, "
                f"cross rank {cross_rank} of {cross_size}"
            )
        if local_size > size or cross_size > size:
            raise ValueError(
                f"invalid sizes: local_size {local_size} and cross_size {cross_size} "
                f"cannot exceed size {size}"
            )
        if local_size != size:
            if not chief_ip:
                raise ValueError(
                    f"This is a distributed job (local_size {local_size} != size {size}) but "
                    "chief_ip was not provided. When cross_size > 1, the chief_ip parameter "
                    "(or DET_CHIEF_IP) is required."
                )
        else:
            chief_ip = "127.0.0.1"  # one machine: contact the chief as localhost (Determined)
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size
        self.cross_rank = cross_rank
        self.cross_size = cross_size
        self._chief_ip = chief_ip
        self._pub_port = pub_port + port_offset
        self._pull_port = pull_port + port_offset
        self._force_tcp = force_tcp
        self._is_chief = rank == 0
        self._is_local_chief = local_rank == 0
        self._closed = False
        self._coll: Any = None
        if size > 1:
            try:
                from harness.pytorch import _collectives  # torch only when there are peers
            except ImportError as exc:
                raise RuntimeError(
                    f"a DistributedContext of {size} workers moves objects with torch.distributed"
                    f", which cannot be imported here ({exc}); install torch in the task's image"
                ) from exc

            self._coll = _collectives.TorchCollectives(
                rank=rank,
                size=size,
                local_rank=local_rank,
                local_size=local_size,
                cross_rank=cross_rank,
                chief_ip=chief_ip,
                port=self._pub_port,
            )

    @property
    def chief_ip(self) -> str | None:
        return self._chief_ip

    @classmethod
    def from_horovod(cls, hvd: Any, chief_ip: str | None = None) -> DistributedContext:
        """Ranks from an initialised horovod module (``import horovod.torch as hvd``).

        The chief's address is required whenever ``hvd.cross_size() > 1``: the ``chief_ip``
        argument or ``DET_CHIEF_IP``.
        """
        return cls(
            rank=hvd.rank(),
            size=hvd.size(),
            local_rank=hvd.local_rank(),
            local_size=hvd.local_size(),
            cross_rank=hvd.cross_rank(),
            cross_size=hvd.cross_size(),
            chief_ip=chief_ip or os.environ.get("DET_CHIEF_IP"),
        )

    @classmethod
    def from_deepspeed(
        cls, chief_ip: str | None = None, env: Mapping[str, str] | None = None
    ) -> DistributedContext:
        """Ranks from the variables Determined's DeepSpeed launcher exports: RANK, WORLD_SIZE,
        LOCAL_RANK, LOCAL_SIZE, CROSS_RANK, CROSS_SIZE. Under mpirun, OMPI_COMM_WORLD_RANK,
        _SIZE, _LOCAL_RANK and _LOCAL_SIZE stand in for missing ones; without CROSS_RANK and
        CROSS_SIZE every node is taken to run LOCAL_SIZE workers (rank // local_size). Chief:
        ``chief_ip`` or ``DET_CHIEF_IP``."""
        e = os.environ if env is None else env
        rank = _int(e, "RANK", "OMPI_COMM_WORLD_RANK")
        size = _int(e, "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE")
        local_size = _int(e, "LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE")
        return cls(
            rank=rank,
            size=size,
            local_rank=_int(e, "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),
            local_size=local_size,
            cross_rank=_int(e, "CROSS_RANK", default=rank // local_size),
            cross_size=_int(e, "CROSS_SIZE", default=size // local_size),
            chief_ip=chief_ip or e.get("DET_CHIEF_IP"),
        )

    @classmethod
    def from_torch_distributed(
        cls, chief_ip: str | None = None, env: Mapping[str, str] | None = None
    ) -> DistributedContext:
        """Ranks from torch.distributed's launcher variables: RANK, WORLD_SIZE, LOCAL_RANK,
        LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE. Chief: ``chief_ip``, ``DET_CHIEF_IP``
        or MASTER_ADDR."""
        e = os.environ if env is None else env
        size = _int(e, "WORLD_SIZE")
        local_size = _int(e, "LOCAL_WORLD_SIZE")
        return cls(
            rank=_int(e, "RANK"),
            size=size,
            local_rank=_int(e, "LOCAL_RANK"),
            local_size=local_size,
            cross_rank=_int(e, "GROUP_RANK", default=0),
            cross_size=_int(e, "GROUP_WORLD_SIZE", default=size // local_size),
            chief_ip=chief_ip or e.get("DET_CHIEF_IP") or e.get("MASTER_ADDR"),
        )

    def close(self) -> None:
        """Tear the process groups down (a collective when size > 1); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._coll is not None:
            self._coll.close()
            self._coll = None

    def get_rank(self) -> int:
        """The rank of this process in the trial (unique among the trial's processes)."""
        return self.rank

    def get_local_rank(self) -> int:
        """The rank of this process on its agent."""
        return self.local_rank

    def get_size(self) -> int:
        """The number of slots (processes) the trial runs on."""
        return self.size

    def get_local_size(self) -> int:
        return self.local_size

    def get_cross_rank(self) -> int:
        return self.cross_rank

    def get_cross_size(self) -> int:
        return self.cross_size

    def get_num_agents(self) -> int:
        """The number of agents the trial runs on."""
        return self.cross_size

    def _peers(self) -> Any:
        if self._closed:
            raise RuntimeError("this DistributedContext is closed")
        return self._coll

    def gather(self, stuff: Any) -> list[Any] | None:
        """Gather ``stuff`` to the chief: the chief gets everyone's (in rank order), the others
        get None."""
        if self.size < 2:
            return [stuff]
        return self._peers().gather(stuff)

    def gather_local(self, stuff: Any) -> list[Any] | None:
        """Gather ``stuff`` to the local chief (in local-rank order); the others get None."""
        if self.local_size < 2:
            return [stuff]
        return self._peers().gather_local(stuff)

    def allgather(self, stuff: Any) -> list[Any]:
        """Everyone's ``stuff``, in rank order, on every worker."""
        if self.size < 2:
            return [stuff]
        return self._peers().allgather(stuff)

    def allgather_local(self, stuff: Any) -> list[Any]:
        """This node's workers' ``stuff``, in local-rank order, on each of them."""
        if self.local_size < 2:
            return [stuff]
        return self._peers().allgather_local(stuff)

    def broadcast(self, stuff: Any) -> Any:
        """Every worker gets the chief's ``stuff`` (what the others pass is ignored)."""
        if self.size < 2:
            return stuff
        return self._peers().broadcast(stuff)

    def broadcast_local(self, stuff: Any = None) -> Any:
        """Every worker gets its local chief's ``stuff``."""
        if self.local_size < 2:
            return stuff
        return self._peers().broadcast_local(stuff)


class DummyDistributedContext(DistributedContext):
    """One worker: rank 0 of 1."""

    def __init__(self) -> None:
        super().__init__(rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1)


def _int(env: Mapping[str, str], *names: str, default: int | None = None) -> int:
    for name in names:
        value = env.get(name)
        if value is not None and value != "":
            try:
                return int(value)
            except ValueError:
                raise ValueError(f"{name}={value!r} is not an integer") from None
    if default is not None:
        return default
    raise KeyError(f"{' or '.join(names)} is not set; is this process started by a launcher?")
