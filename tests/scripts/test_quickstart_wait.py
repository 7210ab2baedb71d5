"""scripts/quickstart_wait.py's progress line: what the quick start prints while it waits."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "quickstart_wait.py"
_spec = importlib.util.spec_from_file_location("quickstart_wait", SCRIPT)
assert _spec is not None and _spec.loader is not None
wait = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wait)

CONFIG = {"searcher": {"name": "single", "max_length": {"batches": 100}}}


def trial(tid: int, state: str, batches: int, loss: float | None = None) -> dict[str, object]:
    t: dict[str, object] = {"id": tid, "state": state, "totalBatchesProcessed": batches}
    if loss is not None:
        t["latestTraining"] = {"metrics": {"avgMetrics": {"loss": loss}}}
    return t


@pytest.mark.parametrize(
    ("reply", "trials", "line"),
    [
        (
            {"experiment": {"state": "STATE_ACTIVE"}, "config": CONFIG},
            [],
            "experiment 7 ACTIVE, waiting for its trial to be created",
        ),
        (
            {"experiment": {"state": "STATE_ACTIVE"}, "config": CONFIG},
            [trial(3, "STATE_QUEUED", 0)],
            "experiment 7 ACTIVE, trial 3 QUEUED: 0/100 batches",
        ),
        (
            {"experiment": {"state": "STATE_ACTIVE"}, "config": CONFIG},
            [trial(4, "STATE_RUNNING", 60, 0.2), trial(3, "STATE_RUNNING", 40, 0.123456)],
            "experiment 7 ACTIVE, trial 3 RUNNING: 40/100 batches, loss 0.1235",
        ),
        (  # max_length as a bare number, and no config at all
            {"experiment": {"state": "STATE_COMPLETED"}, "config": {"searcher": {"max_length": 5}}},
            [trial(3, "STATE_COMPLETED", 5)],
            "experiment 7 COMPLETED, trial 3 COMPLETED: 5/5 batches",
        ),
        (
            {"experiment": {"state": "STATE_ERROR"}},
            [trial(3, "STATE_ERROR", 20)],
            "experiment 7 ERROR, trial 3 ERROR: 20 batches",
        ),
    ],
)
def test_the_progress_line(reply: dict, trials: list, line: str) -> None:  # type: ignore[type-arg]
    assert wait.progress(7, reply, trials) == line


def test_the_clock_counts_from_the_quick_starts_start() -> None:
    assert wait.clock(1000.0, 1000.0) == "[0:00]"
    assert wait.clock(1000.0, 1125.9) == "[2:05]"
