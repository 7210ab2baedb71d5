"""``PyTorchCallback``: hooks a ``PyTorchTrial`` returns from ``build_callbacks()``.

Determined's hook names, arguments and call sites (``determined.pytorch.PyTorchCallback``).
Every worker runs its own copy of each callback; ``on_checkpoint_save_start``,
``on_checkpoint_write_end`` and the deprecated ``on_checkpoint_end`` run on the chief only,
because only the chief writes checkpoints. A callback with state overrides ``state_dict`` and
``load_state_dict``: the trainer stores it in every checkpoint under the callback's name.
"""

from __future__ import annotations

import inspect
import logging
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

logger = logging.getLogger("harness.pytorch")


class PyTorchCallback:
    """Subclass it and override the hooks you need; each default does nothing."""

    def on_trial_startup(self, first_batch_idx: int, checkpoint_uuid: str | None) -> None:
        """Before the data loaders are built and any checkpoint is loaded.

        ``first_batch_idx`` is the batch the trial resumes from on a cluster (0 off one);
        ``checkpoint_uuid`` the checkpoint ``fit`` will load, if any.
        """

    def on_trial_shutdown(self) -> None:
        """When ``fit`` returns or raises (also when paused or preempted, not only when done)."""

    def on_training_start(self) -> None:
        """After any checkpoint is loaded, before the first batch."""

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        """Before the first batch of an epoch."""

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        """After the last batch of an epoch."""

    def on_training_workload_end(self, avg_metrics: dict[str, Any], batch_metrics: Any) -> None:
        """After the batches up to a period's end: their mean metrics and per-batch metrics.

        ``batch_metrics`` is a list with one dict per batch (averaged over the workers), as in
        Determined despite its annotation there.
        """

    def on_validation_start(self) -> None:
        """Before a validation (models already in eval mode)."""

    def on_validation_epoch_start(self) -> None:
        """Before a validation's first ``evaluate_batch`` (not with ``evaluate_full_dataset``)."""

    def on_validation_epoch_end(self, outputs: list[Any]) -> None:
        """After the last ``evaluate_batch``: this worker's per-batch metrics."""

    def on_validation_end(self, metrics: dict[str, Any]) -> None:
        """After a validation, with its (all-worker) metrics, before they are reported."""

    def on_checkpoint_load_start(self, checkpoint: dict[str, Any]) -> None:
        """After a checkpoint's ``state_dict.pth`` is read, before anything is restored from it."""

    def on_checkpoint_save_start(self, checkpoint: dict[str, Any]) -> None:
        """Chief only: before the checkpoint dict is written (changes to it are saved)."""

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        """Deprecated (FutureWarning when overridden): use ``on_checkpoint_write_end``."""

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        """Chief only: after the checkpoint's files are written to ``checkpoint_dir``."""

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        """Every worker: after the checkpoint ``uuid`` is stored and reported."""

    def state_dict(self) -> dict[str, Any]:
        """This callback's state, saved in checkpoints (must pickle)."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the state ``state_dict()`` returned."""


# --- what the trainer calls -------------------------------------------------------------------


def warn_deprecated(callbacks: Iterable[PyTorchCallback], stacklevel: int) -> None:
    """Determined's FutureWarning for each callback that overrides ``on_checkpoint_end``."""
    for callback in callbacks:
        if type(callback).on_checkpoint_end is not PyTorchCallback.on_checkpoint_end:
            warnings.warn(
                "PyTorchCallback.on_checkpoint_end is deprecated: use on_checkpoint_write_end",
                FutureWarning,
                stacklevel=stacklevel + 1,
            )


def on_epoch_start(callbacks: Iterable[PyTorchCallback], epoch_idx: int) -> None:
    for callback in callbacks:
        if inspect.signature(callback.on_training_epoch_start).parameters:
            callback.on_training_epoch_start(epoch_idx)
        else:  # Determined still calls the pre-0.17.8 form, with a warning
            logger.warning("on_training_epoch_start() without epoch_idx is deprecated")
            callback.on_training_epoch_start()  # type: ignore[call-arg]


def load_states(callbacks: Mapping[str, PyTorchCallback], saved: Mapping[str, Any]) -> None:
    """Each callback's state from a checkpoint's ``callbacks`` entry, by name."""
    for name, callback in callbacks.items():
        if name in saved:
            callback.load_state_dict(saved[name])
        elif type(callback).load_state_dict is not PyTorchCallback.load_state_dict:
            logger.warning(
                "callback %r implements load_state_dict() but the checkpoint holds no state for "
                "it: it starts from scratch",
                name,
            )
