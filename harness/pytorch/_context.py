"""``PyTorchTrialContext``: what a ``PyTorchTrial`` is given (Determined's names and semantics).

The trial registers its models, optimizers, LR schedulers and AMP scaler through ``wrap_*`` (so
the trainer can move them to the device, wrap them for DDP, and checkpoint them), and trains one
batch with ``backward`` and ``step_optimizer``. With ``aggregation_frequency`` N > 1 gradients
accumulate over N batches: ``step_optimizer`` steps on every N-th batch only, and under DDP the
other batches skip the all-reduce (the trainer runs their ``train_batch`` under ``no_sync``).
"""

from __future__ import annotations

import contextlib
import enum
import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from harness import core
from harness.pytorch._reducer import MetricReducer, Reducers

logger = logging.getLogger("harness.pytorch")


class LRScheduler:
    """A wrapped LR scheduler and when the trainer steps it (Determined's ``StepMode``)."""

    class StepMode(enum.Enum):
        STEP_EVERY_EPOCH = 1
        STEP_EVERY_BATCH = 2
        MANUAL_STEP = 3
        STEP_EVERY_OPTIMIZER_STEP = 4

    def __init__(self, scheduler: Any, step_mode: LRScheduler.StepMode, frequency: int = 1) -> None:
        if frequency < 1:
            raise ValueError("frequency must be at least 1")
        self.scheduler = scheduler
        self.step_mode = step_mode
        self.frequency = frequency

    def step(self, *args: Any, **kwargs: Any) -> None:
        self.scheduler.step(*args, **kwargs)

    def get_last_lr(self) -> list[float]:
        return list(self.scheduler.get_last_lr())

    def state_dict(self) -> dict[str, Any]:
        return dict(self.scheduler.state_dict())

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.scheduler.load_state_dict(state_dict)


def auto_steps(
    sched: LRScheduler, batch_idx: int, aggregation_frequency: int, epoch_len: int
) -> int:
    """How often the trainer steps ``sched`` after batch ``batch_idx`` (Determined's rules).

    Never on a batch that does not step the optimizer (inside an aggregation window); on one
    that does, the steps the window's batches (or the epochs it ends) owe the scheduler.
    """
    n = aggregation_frequency
    if (batch_idx + 1) % n:
        return 0
    mode, freq = sched.step_mode, sched.frequency
    if mode == LRScheduler.StepMode.STEP_EVERY_EPOCH:
        first, end = batch_idx // epoch_len, (batch_idx + n) // epoch_len
        return sum(1 for e in range(first, end) if (e + 1) % freq == 0) if end > first else 0
    if mode == LRScheduler.StepMode.STEP_EVERY_BATCH and n > 1:
        return sum(1 for i in range(batch_idx - n + 1, batch_idx + 1) if (i + 1) % freq == 0)
    if mode in (
        LRScheduler.StepMode.STEP_EVERY_BATCH,
        LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP,
    ):
        return int((batch_idx + 1) % freq == 0)
    return 0


def pick_device(local_rank: int) -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda", local_rank % max(1, torch.cuda.device_count()))
    return torch.device("cpu")


def to_device(data: Any, device: torch.device, warned_types: set[type] | None = None) -> Any:
    """Tensors anywhere in nested lists, tuples and dicts, moved to ``device``; numeric numpy
    arrays become tensors on the way; anything else is left as it is (``warned_types``:
    Determined's parameter, the types it already warned about; nothing here warns)."""
    if isinstance(data, torch.Tensor):
        return data.to(device, non_blocking=True)
    if isinstance(data, dict):
        return {k: to_device(v, device) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(to_device(v, device) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(to_device(v, device) for v in data)
    kind = getattr(getattr(data, "dtype", None), "kind", None)
    if type(data).__module__ == "numpy" and kind is not None and kind in "fciub":
        return torch.as_tensor(data).to(device, non_blocking=True)
    return data


class PyTorchTrialContext:
    """The trial's view of its training: hyperparameters, devices, wrapped objects, the Core API."""

    def __init__(
        self,
        core_context: core.Context,
        trial_seed: int | None,
        hparams: dict[str, Any] | None,
        slots_per_trial: int,
        num_gpus: int,
        exp_conf: dict[str, Any] | None,
        aggregation_frequency: int = 1,
        steps_completed: int = 0,
        managed_training: bool = True,
        debug_enabled: bool = False,
        enable_tensorboard_logging: bool = True,
    ) -> None:
        if int(aggregation_frequency) < 1:
            raise ValueError(f"aggregation_frequency must be >= 1, not {aggregation_frequency}")
        self._aggregation_frequency = int(aggregation_frequency)
        self._core = core_context
        self.distributed = core_context.distributed
        self._trial_seed = trial_seed
        self._hparams = dict(hparams or {})
        self._slots_per_trial = slots_per_trial
        self._num_gpus = num_gpus
        self._exp_conf = exp_conf
        self._steps_completed = steps_completed
        self._managed_training = managed_training
        self._debug_enabled = debug_enabled
        self._enable_tensorboard_logging = enable_tensorboard_logging
        self.device = pick_device(self.distributed.get_local_rank())
        self.models: list[nn.Module] = []
        self.optimizers: list[torch.optim.Optimizer] = []
        self.lr_schedulers: list[LRScheduler] = []
        self._average_aggregated_gradients: dict[torch.optim.Optimizer, bool] = {}
        self._scaler: Any = None
        self._stop_requested = False
        self._current_batch_idx: int | None = None
        self._epoch_len: int | None = None
        self._reducers = Reducers()
        self._tensorboard_writer: Any = None

    # --- configuration -------------------------------------------------------------------------

    def get_hparams(self) -> dict[str, Any]:
        return dict(self._hparams)

    def get_hparam(self, name: str) -> Any:
        if name not in self._hparams:
            raise ValueError(
                f"hyperparameter {name!r} is not defined; defined: {sorted(self._hparams)}"
            )
        return self._hparams[name]

    def get_experiment_config(self) -> dict[str, Any]:
        if self._exp_conf is None:
            raise ValueError("no experiment config off a cluster: pass exp_conf to init()")
        return self._exp_conf

    def get_data_config(self) -> dict[str, Any]:
        return dict(self.get_experiment_config().get("data") or {})

    def get_global_batch_size(self) -> int:
        if "global_batch_size" not in self._hparams:
            raise ValueError(
                "global_batch_size is not a hyperparameter: define it to use "
                "get_global_batch_size() / get_per_slot_batch_size()"
            )
        return int(self._hparams["global_batch_size"])

    def get_per_slot_batch_size(self) -> int:
        size = self.distributed.get_size()
        total = self.get_global_batch_size()
        if total < size:
            raise ValueError(f"global_batch_size {total} is smaller than the {size} workers")
        if total % size:
            logger.warning(
                "global_batch_size %d does not divide over %d workers: each uses %d",
                total,
                size,
                total // size,
            )
        return total // size

    def get_trial_seed(self) -> int:
        return int(self._trial_seed or 0)

    def get_initial_batch(self) -> int:
        return self._steps_completed

    def get_experiment_id(self) -> int:
        info = self._core.info
        return int(info.trial.experiment_id) if info is not None else 0

    def get_trial_id(self) -> int:
        info = self._core.info
        return int(info.trial.trial_id) if info is not None else 0

    def get_stop_requested(self) -> bool:
        return self._stop_requested

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Ask the trainer to checkpoint and stop after the current batch's periods."""
        self._stop_requested = bool(stop_requested)

    def get_enable_tensorboard_logging(self) -> bool:
        return self._enable_tensorboard_logging

    def set_enable_tensorboard_logging(self, enable_tensorboard_logging: bool) -> None:
        self._enable_tensorboard_logging = bool(enable_tensorboard_logging)

    def get_tensorboard_path(self) -> Path:
        """Where TensorBoard files go (synced to checkpoint storage by the Core API)."""
        return self._core.train.get_tensorboard_path()

    def get_tensorboard_writer(self) -> Any:
        """A ``torch.utils.tensorboard.SummaryWriter`` on ``get_tensorboard_path()`` (one per
        context; needs the ``tensorboard`` package)."""
        if self._tensorboard_writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._tensorboard_writer = SummaryWriter(str(self.get_tensorboard_path()))
        return self._tensorboard_writer

    # --- metric reducers (harness/pytorch/_reducer.py) ----------------------------------------

    def wrap_reducer(
        self,
        reducer: Callable[[list[Any]], Any] | MetricReducer,
        name: str | None = None,
        for_training: bool = True,
        for_validation: bool = True,
    ) -> MetricReducer:
        """Register a distributed-aware metric: a ``MetricReducer``, or a function of the list
        of every value passed to the returned object's ``update()``. Its result is reported
        under ``name`` (or, without a name, is a dict of metrics)."""
        return self._reducers.wrap(reducer, name, for_training, for_validation)

    def reset_reducers(self) -> None:
        self._reducers.reset()

    def reduce_metrics(self, for_training: bool) -> dict[str, Any]:
        """Every worker's ``per_slot_reduce()``, combined by ``cross_slot_reduce()`` (a
        collective when there are several workers: all of them must call it)."""
        reducables = self._reducers.for_period(for_training)
        if not reducables:
            return {}
        mine = [w._call("per_slot_reduce") for w in reducables]
        several = self.distributed.get_size() > 1
        gathered = self.distributed.allgather(mine) if several else [mine]
        return self.run_cross_slot_reduction(reducables, gathered)

    def run_cross_slot_reduction(
        self, reducables: list[Any], gathered: list[Any]
    ) -> dict[str, Any]:
        return self._reducers.cross_slot(reducables, gathered)

    # --- where training is -------------------------------------------------------------------

    def current_train_batch(self) -> int:
        if self._current_batch_idx is None:
            raise RuntimeError("current_train_batch() is only known while training")
        return self._current_batch_idx

    def current_train_epoch(self) -> int:
        assert self._epoch_len, "the training data loader is not built yet"
        return self.current_train_batch() // self._epoch_len

    def is_epoch_start(self) -> bool:
        assert self._epoch_len, "the training data loader is not built yet"
        return self.current_train_batch() % self._epoch_len == 0

    def is_epoch_end(self) -> bool:
        assert self._epoch_len, "the training data loader is not built yet"
        return self.current_train_batch() % self._epoch_len == self._epoch_len - 1

    # --- wrapping ------------------------------------------------------------------------------

    def to_device(self, data: Any) -> Any:
        return to_device(data, self.device)

    def wrap_model(self, model: nn.Module) -> nn.Module:
        """Move ``model`` to this worker's device; under several workers, wrap it in DDP."""
        model = model.to(self.device)
        if self.distributed.get_size() > 1:
            import torch.distributed as dist

            if not dist.is_initialized():
                raise RuntimeError(
                    "several workers but no torch.distributed process group: start the trial "
                    "with `python3 -m harness.launch.torch_distributed -- ...` (or torchrun)"
                )
            ids = [self.device.index] if self.device.type == "cuda" else None
            model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
        self.models.append(model)
        return model

    def wrap_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        backward_passes_per_step: int = 1,
        fp16_compression: bool | None = None,
        average_aggregated_gradients: bool | None = None,
    ) -> torch.optim.Optimizer:
        """Register ``optimizer`` (checkpointed; stepped by ``step_optimizer``).

        ``average_aggregated_gradients`` (default True): with ``aggregation_frequency`` N > 1,
        divide the gradients accumulated over N batches by N before stepping.
        """
        if backward_passes_per_step != 1:
            raise ValueError("backward_passes_per_step other than 1 is not supported")
        average = True if average_aggregated_gradients is None else average_aggregated_gradients
        self._average_aggregated_gradients[optimizer] = bool(average)
        self.optimizers.append(optimizer)
        return optimizer

    def wrap_lr_scheduler(
        self,
        lr_scheduler: Any,
        step_mode: LRScheduler.StepMode,
        frequency: int = 1,
    ) -> Any:
        """Register ``lr_scheduler``; the trainer steps it per ``step_mode`` and checkpoints it."""
        self.lr_schedulers.append(LRScheduler(lr_scheduler, step_mode, frequency))
        return lr_scheduler

    def wrap_scaler(self, scaler: Any) -> Any:
        """Register a native AMP ``GradScaler`` (once, before ``wrap_model``); it is checkpointed.

        Use it as in plain PyTorch: scale the loss before ``backward``, ``unscale_`` before
        clipping, pass it to ``step_optimizer(..., scaler=scaler)``, and call
        ``scaler.update()`` after stepping every optimizer of the batch. A disabled scaler (no
        GPU) is accepted and changes nothing.
        """
        if self._scaler is not None:
            raise RuntimeError("wrap_scaler() may be called only once")
        if self.models:
            raise RuntimeError("call wrap_scaler() before wrap_model()")
        self._scaler = scaler
        return scaler

    # --- one batch -----------------------------------------------------------------------------

    def backward(
        self,
        loss: torch.Tensor,
        gradient: torch.Tensor | None = None,
        retain_graph: bool = False,
        create_graph: bool = False,
    ) -> None:
        """``loss.backward(...)``; under DDP without the all-reduce on batches that do not step."""
        if (
            self._aggregation_frequency > 1
            and self.distributed.get_size() > 1
            and not self._should_communicate_and_update()
        ):
            with self._no_sync():
                loss.backward(
                    gradient=gradient, retain_graph=retain_graph, create_graph=create_graph
                )
            return
        loss.backward(gradient=gradient, retain_graph=retain_graph, create_graph=create_graph)

    @contextlib.contextmanager
    def _no_sync(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for model in self.models:
                if isinstance(model, nn.parallel.DistributedDataParallel):
                    stack.enter_context(model.no_sync())
            yield

    def _should_communicate_and_update(self) -> bool:
        """Whether this batch ends an aggregation window: gradients are exchanged and applied."""
        if self._aggregation_frequency == 1:
            return True
        if self._current_batch_idx is None:
            raise RuntimeError("aggregation_frequency > 1 needs the trainer's batch index")
        return (self._current_batch_idx + 1) % self._aggregation_frequency == 0

    def step_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        clip_grads: Callable[[Iterable[torch.Tensor]], None] | None = None,
        auto_zero_grads: bool = True,
        scaler: Any = None,
    ) -> None:
        """Clip (optionally), step (through ``scaler`` when given), zero the gradients.

        With ``aggregation_frequency`` N > 1 this does nothing on batches that do not end an
        N-batch window; on those that do, the accumulated gradients are first divided by N
        (unless the optimizer was wrapped with ``average_aggregated_gradients=False``).
        ``auto_zero_grads`` must then stay True. LR schedulers are stepped by the trainer.
        """
        if optimizer not in self.optimizers:
            raise ValueError("step_optimizer() takes an optimizer returned by wrap_optimizer()")
        n = self._aggregation_frequency
        if n > 1:
            if not auto_zero_grads:
                raise ValueError(
                    "auto_zero_grads=False is not allowed with optimizations."
                    f"aggregation_frequency {n}: gradients must be zeroed after each step"
                )
            if not self._should_communicate_and_update():
                return
            if self._average_aggregated_gradients.get(optimizer, True):
                for group in optimizer.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.grad.div_(float(n))
        if clip_grads is not None:
            clip_grads([p for group in optimizer.param_groups for p in group["params"]])
        if scaler is not None:
            scaler.step(optimizer)
        else:
            optimizer.step()
        if auto_zero_grads:
            optimizer.zero_grad()
