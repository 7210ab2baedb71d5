"""Determined's PreviewHPSearch: an experiment config checked as creating it would check it
(without placing it anywhere or needing an entrypoint), and what its search would run
(`domain.search_preview`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controlplane.api.schemas.expconf.errors import ExperimentConfigError
from controlplane.api.schemas.expconf.expand import expand_config
from controlplane.api.schemas.expconf.validate import validate_experiment_config
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.search_preview import TrialGroup, summarize
from controlplane.domain.searcher.factory import make_searcher

# Expansion wants a checkpoint storage; a preview stores nothing, so any valid one does.
_NO_STORAGE = {"type": "shared_fs", "host_path": "/nonexistent-preview"}


@dataclass(frozen=True)
class Preview:
    searcher: dict[str, Any]
    trials: list[TrialGroup]


def preview(config: dict[str, Any], seed: int) -> Preview:
    if "searcher" not in config:
        raise InvalidArgument("invalid experiment configuration; missing searcher")
    try:
        cfg = validate_experiment_config(config, None, managed=False)
        expanded = expand_config(cfg, master_checkpoint_storage=_NO_STORAGE, now_seconds=seed)
    except ExperimentConfigError as exc:
        raise InvalidArgument(f"invalid experiment configuration:\n{exc}") from exc
    searcher = dict(expanded["searcher"])
    space = dict(expanded.get("hyperparameters") or {})
    make_searcher(searcher, space, seed)  # the searcher's own checks (a 400 each)
    return Preview(searcher, summarize(searcher, space))
