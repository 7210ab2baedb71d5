"""make_searcher takes what expconf validation and expansion produce (the master's input)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from controlplane.api.schemas.expconf import expand_config, validate_experiment_config
from controlplane.domain.searcher import Create, make_searcher, restore_searcher

EXAMPLES = sorted(Path(__file__).resolve().parents[4].glob("examples/**/*.yaml"))
STORAGE = {"type": "shared_fs", "host_path": "/tmp/checkpoints"}

SEARCHERS = [
    "name: random\nmetric: loss\nmax_trials: 5\nmax_concurrent_trials: 2",
    "name: grid\nmetric: loss",
    "name: async_halving\nmetric: loss\nnum_rungs: 3\nmax_trials: 9\ntime_metric: batches\n"
    "max_time: 90\npromotions: true",
    "name: adaptive_asha\nmetric: acc\nsmaller_is_better: false\nmax_trials: 9\n"
    "time_metric: epochs\nmax_time: 27\nmode: conservative\nmax_length: {epochs: 27}",
    "name: tpe\nmetric: loss\nmax_trials: 5\nn_startup_trials: 2",
    "name: adaptive_asha\nmetric: acc\nsmaller_is_better: false\nmax_trials: 9\n"
    "time_metric: epochs\nmax_time: 27\npromotions: true",
]
HPARAMS = """
hyperparameters:
  batch: 32
  lr: {type: log, minval: -4, maxval: -1, count: 2}
  layers: {type: int, minval: 1, maxval: 3, count: 3}
  opt:
    name: {type: categorical, vals: [sgd, adam]}
    momentum: {type: double, minval: 0.0, maxval: 0.9, count: 2}
"""


def _expand(text: str) -> dict[str, Any]:
    data = YAML(typ="safe").load(text)
    cfg = validate_experiment_config(data)
    return expand_config(cfg, master_checkpoint_storage=STORAGE, now_seconds=1_700_000_000)


@pytest.mark.parametrize("searcher", SEARCHERS)
def test_expanded_configs_build_searchers_that_create_trials(searcher: str) -> None:
    text = "name: e\nentrypoint: python3 t.py\nsearcher:\n" + "".join(
        f"  {line}\n" for line in searcher.splitlines()
    )
    config = _expand(text + HPARAMS)
    seed = config["reproducibility"]["experiment_seed"]
    built = make_searcher(config["searcher"], config["hyperparameters"], seed)
    ops = built.initial_operations()
    assert ops and all(isinstance(op, Create) for op in ops)
    assert {"batch", "lr", "layers", "opt"} <= set(ops[0].hparams)  # type: ignore[union-attr]
    assert set(ops[0].hparams["opt"]) == {"name", "momentum"}  # type: ignore[union-attr]
    again = restore_searcher(config["searcher"], config["hyperparameters"], built.snapshot())
    assert again.snapshot() == built.snapshot()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_config_builds_a_searcher(path: Path) -> None:
    config = _expand(path.read_text())
    seed = config["reproducibility"]["experiment_seed"]
    assert make_searcher(config["searcher"], config["hyperparameters"], seed).initial_operations()
