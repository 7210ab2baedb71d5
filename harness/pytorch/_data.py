"""Data loaders for trials, and the training stream that can stop and resume mid-epoch.

``DataLoader`` takes torch's ``DataLoader`` arguments (as ``determined.pytorch.DataLoader``
does); the trainer builds the real loader per worker: each worker gets its shard
(``DistributedSampler``), and a shuffled order depends only on the trial seed and the epoch,
never on the global RNG.

``BatchStream`` feeds batches to the trainer and knows its position (epoch, batch within the
epoch, and the torch RNG state at the start of the epoch). Resuming replays the epoch's start
under that RNG state and skips the batches already trained, so a resumed trial sees the same
batches in the same order as an uninterrupted one, whether the loader is ours or a plain
``torch.utils.data.DataLoader`` (whose ``RandomSampler`` draws its order from the global RNG).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any, Dict, Union  # noqa: UP035 (TorchData is a runtime alias)

import torch
import torch.utils.data

logger = logging.getLogger("harness.pytorch")


# What a batch may be (Determined's ``pytorch.TorchData``).
TorchData = Union[Dict[str, torch.Tensor], Sequence[torch.Tensor], torch.Tensor]  # noqa: UP006, UP007


class DataLoader:
    """``torch.utils.data.DataLoader``'s arguments, built per worker by the trainer."""

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool = False,
        sampler: Any = None,
        batch_sampler: Any = None,
        num_workers: int = 0,
        collate_fn: Any = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Any = None,
        multiprocessing_context: Any = None,
        generator: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
    ) -> None:
        if sampler is not None or batch_sampler is not None:
            raise ValueError(
                "harness.pytorch.DataLoader makes its own sampler (sharded per worker, seeded "
                "per epoch); pass a torch.utils.data.DataLoader to use a custom sampler"
            )
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.kwargs: dict[str, Any] = {
            "num_workers": num_workers,
            "collate_fn": collate_fn,
            "pin_memory": pin_memory,
            "timeout": timeout,
            "worker_init_fn": worker_init_fn,
            "multiprocessing_context": multiprocessing_context,
            "generator": generator,
            "persistent_workers": persistent_workers,
        }
        if prefetch_factor is not None:
            self.kwargs["prefetch_factor"] = prefetch_factor

    def get_data_loader(
        self,
        repeat: bool = False,
        skip: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
        *,
        seed: int = 0,
        training: bool = True,
    ) -> torch.utils.data.DataLoader:
        """The loader of worker ``rank`` of ``num_replicas``. Determined's ``repeat`` and
        ``skip`` are not offered (the trainer positions its loaders itself)."""
        if repeat or skip:
            raise ValueError("get_data_loader(): repeat and skip are not offered")
        sampler = None
        if self.shuffle or num_replicas > 1:
            sampler = torch.utils.data.distributed.DistributedSampler(
                self.dataset,
                num_replicas=num_replicas,
                rank=rank,
                shuffle=self.shuffle,
                seed=seed,
                drop_last=training and self.drop_last,
            )
        return torch.utils.data.DataLoader(
            self.dataset,
            batch_size=self.batch_size,
            sampler=sampler,
            drop_last=self.drop_last,
            **self.kwargs,
        )

    def __len__(self) -> int:
        return len(self.get_data_loader())


def data_length(data: Any) -> int:
    """Records in a batch: the length of its first tensor or array (in a dict, list or tuple)."""
    if hasattr(data, "__len__") and hasattr(data, "shape"):
        return len(data)
    if isinstance(data, dict):
        if not data:
            raise ValueError("a batch must hold at least one tensor or array")
        return data_length(next(iter(data.values())))
    if isinstance(data, (list, tuple)):
        if not data:
            raise ValueError("a batch must hold at least one tensor or array")
        return data_length(data[0])
    raise TypeError(f"cannot tell the length of a batch of type {type(data).__name__}")


def as_torch_loader(
    loader: Any, *, num_replicas: int, rank: int, seed: int, training: bool
) -> torch.utils.data.DataLoader:
    if isinstance(loader, DataLoader):
        return loader.get_data_loader(
            num_replicas=num_replicas, rank=rank, seed=seed, training=training
        )
    if isinstance(loader, torch.utils.data.DataLoader):
        if num_replicas > 1 and not isinstance(
            loader.sampler, torch.utils.data.distributed.DistributedSampler
        ):
            logger.warning(
                "a plain torch DataLoader under %d workers: every worker reads the whole "
                "dataset; return harness.pytorch.DataLoader to shard it",
                num_replicas,
            )
        return loader
    what = "training" if training else "validation"
    raise TypeError(
        f"build_{what}_data_loader must return harness.pytorch.DataLoader or "
        f"torch.utils.data.DataLoader, not {type(loader).__name__}"
    )


def epoch_length(loader: torch.utils.data.DataLoader) -> int:
    try:
        n = len(loader)
    except TypeError:
        raise ValueError(
            "the training data loader has no length (an IterableDataset?): the trainer needs "
            "it to count epochs; give the dataset a __len__"
        ) from None
    if n < 1:
        raise ValueError("the training data loader is empty")
    return n


class BatchStream:
    """Batches of the training loader, epoch after epoch, from a saved position onwards."""

    def __init__(self, loader: torch.utils.data.DataLoader, epoch_len: int) -> None:
        self.loader = loader
        self.epoch_len = epoch_len
        self.epoch = 0
        self.in_epoch = 0  # batches of the current epoch already handed out
        self.epoch_rng: torch.Tensor | None = None
        self._it: Iterator[Any] | None = None

    def position(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "in_epoch": self.in_epoch,
            "epoch_rng": self.epoch_rng if self.in_epoch else None,
        }

    def seek(self, batches_trained: int, epoch_rng: torch.Tensor | None) -> None:
        """Continue after ``batches_trained`` batches; ``epoch_rng`` as saved by ``position``."""
        self.epoch, self.in_epoch = divmod(batches_trained, self.epoch_len)
        self._it = None
        if self.in_epoch == 0:
            return
        now = torch.get_rng_state()
        if epoch_rng is not None:
            torch.set_rng_state(epoch_rng)
        try:
            it = self._begin_epoch()
            for _ in range(self.in_epoch):  # replay the epoch's start, then drop those batches
                next(it)
        finally:
            torch.set_rng_state(now)
        self._it = it

    def _begin_epoch(self) -> Iterator[Any]:
        set_epoch = getattr(self.loader.sampler, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(self.epoch)
        self.epoch_rng = torch.get_rng_state()
        return iter(self.loader)

    def next(self) -> Any:
        if self.in_epoch >= self.epoch_len:
            self.epoch, self.in_epoch, self._it = self.epoch + 1, 0, None
        if self._it is None:
            self._it = self._begin_epoch()
        try:
            batch = next(self._it)
        except StopIteration:
            raise RuntimeError(
                f"the training loader gave {self.in_epoch} batches in epoch {self.epoch}, "
                f"fewer than its length {self.epoch_len}"
            ) from None
        self.in_epoch += 1
        return batch
