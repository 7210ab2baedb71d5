"""``PyTorchTrialContext``: what a ``PyTorchTrial`` is given (Determined's names and semantics).

The trial registers its models, optimizers and LR schedulers through ``wrap_*`` (so the trainer
can move them to the device, wrap them for DDP, and checkpoint them), and trains one batch with
``backward`` and ``step_optimizer``.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

from harness import core

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

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.scheduler.load_state_dict(state)


def pick_device(local_rank: int) -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda", local_rank % max(1, torch.cuda.device_count()))
    return torch.device("cpu")


def to_device(data: Any, device: torch.device) -> Any:
    """Tensors anywhere in nested lists, tuples and dicts, moved to ``device``."""
    if isinstance(data, torch.Tensor):
        return data.to(device, non_blocking=True)
    if isinstance(data, dict):
        return {k: to_device(v, device) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(to_device(v, device) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(to_device(v, device) for v in data)
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
        if aggregation_frequency != 1:
            raise ValueError("aggregation_frequency other than 1 is not supported")
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
        self._stop_requested = False
        self._current_batch_idx: int | None = None
        self._epoch_len: int | None = None

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
        fp16_compression: bool = False,
        average_aggregated_gradients: bool = True,
    ) -> torch.optim.Optimizer:
        if backward_passes_per_step != 1:
            raise ValueError("backward_passes_per_step other than 1 is not supported")
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

    # --- one batch -----------------------------------------------------------------------------

    def backward(
        self,
        loss: torch.Tensor,
        gradient: torch.Tensor | None = None,
        retain_graph: bool = False,
        create_graph: bool = False,
    ) -> None:
        loss.backward(gradient=gradient, retain_graph=retain_graph, create_graph=create_graph)

    def step_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        clip_grads: Callable[[Iterable[torch.Tensor]], None] | None = None,
        auto_zero_grads: bool = True,
        scaler: Any = None,
    ) -> None:
        """Clip (optionally), step, zero gradients; step STEP_EVERY_OPTIMIZER_STEP schedulers."""
        if optimizer not in self.optimizers:
            raise ValueError("step_optimizer() takes an optimizer returned by wrap_optimizer()")
        if clip_grads is not None:
            clip_grads([p for group in optimizer.param_groups for p in group["params"]])
        if scaler is not None:
            scaler.step(optimizer)
        else:
            optimizer.step()
        if auto_zero_grads:
            optimizer.zero_grad()
        for sched in self.lr_schedulers:
            if sched.step_mode == LRScheduler.StepMode.STEP_EVERY_OPTIMIZER_STEP:
                sched.step()
