"""What a ``Trainer`` checkpoint holds besides its state dict, and how the wrapped objects get
their states back: kept apart from the training loop, which changes for other reasons."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch

from harness.pytorch import _callback
from harness.pytorch._callback import PyTorchCallback
from harness.pytorch._context import PyTorchTrialContext
from harness.pytorch._trial import PyTorchTrial

logger = logging.getLogger("harness.pytorch")

STATE_FILE = "state_dict.pth"
LOAD_DATA_FILE = "load_data.json"  # what load_trial_from_checkpoint_path() needs, as Determined's


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    return model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model


def write_load_data(path: Path, trial: PyTorchTrial, context: PyTorchTrialContext) -> None:
    kind = type(trial)
    try:
        config: dict[str, Any] | None = context.get_experiment_config()
    except ValueError:
        config = None
    load_data = {
        "trial_type": "PyTorchTrial",
        "experiment_config": config,
        "hparams": context.get_hparams(),
        "trial_cls_spec": f"{kind.__module__}:{kind.__qualname__}",
        "is_trainer": True,
    }
    (path / LOAD_DATA_FILE).write_text(json.dumps(load_data, default=str))


def load_wrapped_states(
    state: dict[str, Any], context: PyTorchTrialContext, storage_id: str
) -> None:
    """The models', optimizers' and LR schedulers' states, refusing a checkpoint whose counts
    differ from what the trial wrapped (another model definition saved it)."""
    for what, objects, key in (
        ("models", [unwrap(m) for m in context.models], "models_state_dict"),
        ("optimizers", context.optimizers, "optimizers_state_dict"),
        ("LR schedulers", context.lr_schedulers, "lr_schedulers_state_dict"),
    ):
        saved = state[key]
        if len(saved) != len(objects):
            raise ValueError(
                f"checkpoint {storage_id} holds {len(saved)} {what}; the trial wrapped "
                f"{len(objects)}: was it saved by another model definition?"
            )
        for obj, sd in zip(objects, saved):  # noqa: B905 (lengths checked above)
            obj.load_state_dict(sd)


def restore_scaler_and_callbacks(
    state: dict[str, Any],
    scaler: Any,
    named_callbacks: dict[str, PyTorchCallback],
) -> None:
    """The AMP scaler's and the callbacks' states (also on a warm start, as in Determined)."""
    if "scaler_state_dict" in state:
        if scaler is not None:
            scaler.load_state_dict(state["scaler_state_dict"])
        else:
            logger.warning("the checkpoint holds an AMP scaler's state; the trial wraps none")
    elif scaler is not None:
        logger.warning("the trial wraps an AMP scaler; the checkpoint holds no scaler state")
    _callback.load_states(named_callbacks, state.get("callbacks") or {})
