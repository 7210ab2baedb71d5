"""Load a trained ``PyTorchTrial`` from a checkpoint's files (Determined's
``load_trial_from_checkpoint_path`` and ``CheckpointLoadContext``).

The trainer writes ``load_data.json`` next to ``state_dict.pth``: the trial class
(``module:QualName``), its hyperparameters and experiment config. Loading builds the trial with
a ``CheckpointLoadContext`` (no cluster, no reporting) and loads each wrapped model's state. The
class comes from ``trial_class`` when given; else it is imported from the checkpoint's ``code/``
folder when the checkpoint has one (``det.import_from_path``), else from the current
``sys.path`` (the model definition the task or the user's shell already has).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any

import torch

from harness._imports import import_from_path
from harness.core import PreemptMode
from harness.core._context import _dummy_init
from harness.pytorch._context import PyTorchTrialContext
from harness.pytorch._trial import PyTorchTrial

logger = logging.getLogger("harness.pytorch")


class CheckpointLoadContext(PyTorchTrialContext):
    """A trial context for building a trial outside training: nothing is reported or stored."""

    def __init__(
        self, hparams: dict[str, Any] | None = None, exp_conf: dict[str, Any] | None = None
    ) -> None:
        super().__init__(
            core_context=_dummy_init(None, None, PreemptMode.WorkersAskChief),
            trial_seed=0,
            hparams=hparams,
            slots_per_trial=1,
            num_gpus=torch.cuda.device_count(),
            exp_conf=exp_conf,
            aggregation_frequency=1,
            steps_completed=0,
            managed_training=False,
            debug_enabled=False,
        )


def _import_trial_class(spec: str, code: Path) -> type[PyTorchTrial]:
    module_name, _, qualname = spec.partition(":")
    if module_name == "__main__":
        raise ValueError(
            f"the trial class {qualname} was defined in the entrypoint script: pass it as "
            "trial_class= (or define it in an importable module)"
        )

    def load() -> Any:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return obj

    try:
        if code.is_dir():
            with import_from_path(code):
                return load()  # type: ignore[no-any-return]
        return load()  # type: ignore[no-any-return]
    except Exception as exc:
        raise ValueError(
            f"cannot import the trial class {spec} of the checkpoint ({exc}); pass it as "
            "trial_class="
        ) from exc


def load_trial_from_checkpoint_path(
    path: str | os.PathLike[str],
    trial_class: type[PyTorchTrial] | None = None,
    trial_kwargs: dict[str, Any] | None = None,
    torch_load_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> PyTorchTrial:
    """The trial of a downloaded checkpoint (``Checkpoint.download()``), its models restored.

    ``trial_kwargs`` go to the trial's constructor after the context; ``torch_load_kwargs`` to
    ``torch.load`` (``**kwargs``: Determined's deprecated form of it).
    """
    trial_kwargs = trial_kwargs or {}
    torch_load_kwargs = dict(torch_load_kwargs or {})
    if kwargs:
        if torch_load_kwargs:
            raise ValueError("kwargs may not be set if torch_load_kwargs is also set")
        warnings.warn(
            "load_trial_from_checkpoint_path(**kwargs) is deprecated: pass torch_load_kwargs",
            FutureWarning,
            stacklevel=2,
        )
        torch_load_kwargs = kwargs
    folder = Path(path)
    load_data_path = folder / "load_data.json"
    if not load_data_path.exists():
        raise ValueError(
            f"{folder} has no load_data.json: it is not a checkpoint written by a PyTorchTrial"
        )
    load_data = json.loads(load_data_path.read_text())
    if load_data.get("trial_type") != "PyTorchTrial":
        logger.warning("%s does not look like a PyTorchTrial checkpoint; loading anyway", folder)
    if trial_class is None:
        trial_class = _import_trial_class(load_data["trial_cls_spec"], folder / "code")
    context = CheckpointLoadContext(load_data.get("hparams"), load_data.get("experiment_config"))
    trial = trial_class(context, **trial_kwargs)  # type: ignore[call-arg]
    torch_load_kwargs.setdefault("map_location", "cpu")
    torch_load_kwargs.setdefault("weights_only", False)
    state = torch.load(folder / "state_dict.pth", **torch_load_kwargs)
    saved = state["models_state_dict"]
    if len(saved) != len(context.models):
        raise ValueError(
            f"the checkpoint holds {len(saved)} models; the trial wrapped {len(context.models)}"
        )
    for model, model_state in zip(context.models, saved):  # noqa: B905 (lengths checked)
        model.load_state_dict(model_state)
    return trial
