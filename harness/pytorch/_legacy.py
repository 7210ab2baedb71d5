"""``python3 -m harness.pytorch._legacy model_def:TrialClass``: Determined's legacy entrypoint.

An experiment whose ``entrypoint`` names a ``PyTorchTrial`` subclass runs it here, as
Determined's ``determined.exec.harness`` does: import the class from the context directory,
``harness.pytorch.init()``, and ``Trainer.fit`` with the experiment config's
``searcher.max_length`` (or adaptive ASHA's ``max_time``/``time_metric``),
``min_validation_period`` and ``min_checkpoint_period``, resuming from the latest checkpoint;
``optimizations.aggregation_frequency`` goes to ``init()``.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import harness
from harness import pytorch
from harness.pytorch._units import searcher_max_length, unit_from_config


def load_trial_class(entrypoint: str) -> type[pytorch.PyTorchTrial]:
    module_name, _, class_name = entrypoint.partition(":")
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # the context directory (the cwd) holds the model definition
    module = importlib.import_module(module_name)
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ImportError(f"{module_name!r} has no {class_name!r} (entrypoint {entrypoint!r})")
    if not (isinstance(cls, type) and issubclass(cls, pytorch.PyTorchTrial)):
        raise TypeError(
            f"entrypoint {entrypoint!r} names {cls!r}, not a harness.pytorch.PyTorchTrial "
            "subclass (Resolute runs legacy PyTorchTrial entrypoints only)"
        )
    return cls


def fit_arguments(config: dict[str, Any], hparams: dict[str, Any]) -> dict[str, Any]:
    """Trainer.fit's keyword arguments from an experiment config, as Determined derives them."""
    gbs = hparams.get("global_batch_size")
    common = {
        "global_batch_size": int(gbs) if gbs else None,
        "records_per_epoch": config.get("records_per_epoch"),
    }
    max_length = unit_from_config(searcher_max_length(config), what="searcher.max_length", **common)
    if max_length is None:
        raise ValueError("a legacy entrypoint needs searcher.max_length in the experiment config")
    args: dict[str, Any] = {"max_length": max_length}
    for key, arg in (
        ("min_validation_period", "validation_period"),
        ("min_checkpoint_period", "checkpoint_period"),
    ):
        value = config.get(key)
        if _is_zero(value):
            continue  # Determined's default, {batches: 0}: no periodic validation/checkpoint
        unit = unit_from_config(value, what=key, **common)
        if unit is not None:
            args[arg] = unit
    policy = config.get("checkpoint_policy")
    if policy in ("best", "all", "none"):
        args["checkpoint_policy"] = policy
    period = config.get("scheduling_unit")
    if isinstance(period, int) and period > 0:
        args["reporting_period"] = pytorch.Batch(period)
    if (config.get("profiling") or {}).get("enabled"):
        args["profiling_enabled"] = True  # Determined's harness: exp_conf.profiling_enabled()
    return args


def _is_zero(length: Any) -> bool:
    """0 or {unit: 0}: a period that is off."""
    if isinstance(length, dict) and len(length) == 1:
        (length,) = length.values()
    return isinstance(length, int) and not isinstance(length, bool) and length == 0


def aggregation_frequency(config: dict[str, Any]) -> int:
    """``optimizations.aggregation_frequency`` (default 1), as Determined's harness passes it."""
    return int((config.get("optimizations") or {}).get("aggregation_frequency") or 1)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    if len(argv) != 1:
        print("usage: python3 -m harness.pytorch._legacy model_def:TrialClass", file=sys.stderr)
        return 2
    try:
        trial_class = load_trial_class(argv[0])
    except (ImportError, TypeError) as exc:  # the user's mistake: one clear line, no traceback
        print(f"ERROR: cannot run legacy entrypoint {argv[0]!r}: {exc}", file=sys.stderr)
        return 1
    info = harness.get_cluster_info()
    if info is None or info.task_type != "TRIAL":
        print("a legacy entrypoint runs only as a trial on a cluster", file=sys.stderr)
        return 2
    config = info.trial._config
    with pytorch.init(aggregation_frequency=aggregation_frequency(config)) as context:
        args = fit_arguments(config, context.get_hparams())
        trial = trial_class(context)
        pytorch.Trainer(trial, context).fit(latest_checkpoint=info.latest_checkpoint, **args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
