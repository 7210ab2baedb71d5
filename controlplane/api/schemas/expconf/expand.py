"""Fill every default into a validated config, as Determined's master returns it.

The result is what the API returns as `experiment.config` and what tasks receive as
DET_EXPERIMENT_CONFIG. Context-dependent defaults (the time, the master's checkpoint storage,
the pool's default priority) are passed in; nothing here reads the clock or the environment.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from .errors import ConfigIssue, ExperimentConfigError
from .models_environment import DEFAULT_IMAGE, DEVICE_TYPES
from .models_experiment import DEFAULT_PREEMPTION_TIMEOUT, ExperimentConfig
from .models_storage import CheckpointStorageConfig
from .validate import issues_from_validation_error

_STORAGE = TypeAdapter(CheckpointStorageConfig)


def _master_storage(raw: dict[str, Any] | None) -> dict[str, Any]:
    if raw is None:
        raise ExperimentConfigError(
            ConfigIssue(
                "checkpoint_storage",
                "Field required: the experiment sets no checkpoint_storage and the master has "
                "no default checkpoint_storage",
            )
        )
    try:
        storage = _STORAGE.validate_python(raw)
    except ValidationError as exc:
        issues = issues_from_validation_error(exc, raw, None)
        raise ExperimentConfigError(
            [
                ConfigIssue(
                    "checkpoint_storage" + (f".{issue.path}" if issue.path else ""),
                    f"in the master's default checkpoint_storage: {issue.message}",
                )
                for issue in issues
            ]
        ) from None
    return _STORAGE.dump_python(storage, mode="json")


def _image(current: dict[str, Any] | None) -> dict[str, str]:
    current = current or {}
    return {kind: current.get(kind) or DEFAULT_IMAGE for kind in DEVICE_TYPES}


def expand_config(
    cfg: ExperimentConfig,
    *,
    master_checkpoint_storage: dict[str, Any] | None,
    default_priority: int | None = None,
    now_seconds: int,
    default_name: str | None = None,
) -> dict[str, Any]:
    """The fully expanded, JSON-able config with every default filled in.

    - checkpoint_storage: the experiment's block, else the master's (validated, GC defaults
      filled); neither present raises `ExperimentConfigError`;
    - reproducibility.experiment_seed: `now_seconds` when unset;
    - resources.priority: `default_priority` when unset (left null when that is None too);
    - preemption_timeout: 3600 (the task_container_defaults value) when unset;
    - environment.image: {cpu, cuda, rocm}, missing ones set to the default image;
    - environment.environment_variables: {cpu, cuda, rocm} lists;
    - environment.python (Resolute's): left out when unset, so the config keeps Determined's keys;
    - hyperparameters: shorthands become {type: const, val};
    - searcher.max_length: omitted when unset, so tasks do not build a SearcherContext;
    - name: `default_name` when unset (Determined's "Experiment (<petname>)");
    - resources.slots (a command's key Determined's schema accepts): omitted when unset.
    """
    out: dict[str, Any] = cfg.model_dump(mode="json")
    if out.get("name") is None and default_name is not None:
        out["name"] = default_name
    if cfg.checkpoint_storage is None:
        out["checkpoint_storage"] = _master_storage(master_checkpoint_storage)
    reproducibility = out["reproducibility"]
    if reproducibility.get("experiment_seed") is None:
        reproducibility["experiment_seed"] = int(now_seconds)
    resources = out["resources"]
    if resources.get("slots") is None:
        resources.pop("slots", None)
    if resources.get("priority") is None and default_priority is not None:
        resources["priority"] = int(default_priority)
    if out.get("preemption_timeout") is None:
        out["preemption_timeout"] = DEFAULT_PREEMPTION_TIMEOUT
    environment = out["environment"]
    environment["image"] = _image(environment.get("image"))
    if environment.get("python") is None:  # Resolute's key: absent unless set, as in Determined
        environment.pop("python", None)
    searcher = out.get("searcher")
    if isinstance(searcher, dict) and searcher.get("max_length") is None:
        searcher.pop("max_length", None)
    return out
