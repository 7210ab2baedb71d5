"""The metric data every ingestion path carries: 1,000 values per request, 10 series.

One Resolute report = `avgMetrics` (10 values) + `batchMetrics` (99 batches x 10 values)
= 1,000 values, the shape a training loop reports every 99 batches. One MLflow `log-batch` call =
100 steps x 10 metrics = 1,000 values (MLflow's per-call limit). The COPY floors store the same
reports. Values are full-precision floats, as a training loop produces them.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

METRIC_NAMES = (
    "loss",
    "accuracy",
    "top5_accuracy",
    "learning_rate",
    "grad_norm",
    "loss_scale",
    "batch_time_s",
    "data_time_s",
    "samples_per_s",
    "gpu_memory_gb",
)
BATCHES_PER_REPORT = 99  # plus one block of averages
VALUES_PER_REQUEST = len(METRIC_NAMES) * (BATCHES_PER_REPORT + 1)  # 1,000
STEP_PLACEHOLDER = '"__STEPS__"'


def metric_block(rng: random.Random) -> dict[str, float]:
    return {name: rng.random() * 10 ** rng.randint(-4, 3) for name in METRIC_NAMES}


def report_metrics(rng: random.Random) -> tuple[dict[str, float], list[dict[str, float]]]:
    """(avg_metrics, batch_metrics) for one report."""
    return metric_block(rng), [metric_block(rng) for _ in range(BATCHES_PER_REPORT)]


class ResoluteReports:
    """Pre-encoded POST /api/v1/trials/{id}/metrics bodies; only `stepsCompleted` changes."""

    def __init__(self, trial_id: int, seed: int) -> None:
        avg, batches = report_metrics(random.Random(seed))
        body = {
            "group": "training",
            "metrics": {
                "trialId": trial_id,
                "trialRunId": 1,
                "stepsCompleted": "__STEPS__",
                "metrics": {"avgMetrics": avg, "batchMetrics": batches},
            },
        }
        text = json.dumps(body, separators=(",", ":"))
        self.head, self.tail = text.split(STEP_PLACEHOLDER)

    def body(self, seq: int) -> bytes:
        """The seq-th report (1-based): steps grow by BATCHES_PER_REPORT each time."""
        return f"{self.head}{seq * BATCHES_PER_REPORT}{self.tail}".encode()


class MlflowBatches:
    """log-batch bodies: 100 consecutive steps x 10 metrics; steps and timestamp change."""

    STEPS = BATCHES_PER_REPORT + 1

    def __init__(self, run_id: str, seed: int) -> None:
        rng = random.Random(seed)
        self.run_id = run_id
        # (step offset, '{"key":..,"value":..,"timestamp":') for each of the 1,000 values
        self.items = [
            (i, f'{{"key":"{name}","value":{json.dumps(value)},"timestamp":')
            for i in range(self.STEPS)
            for name, value in metric_block(rng).items()
        ]

    def body(self, seq: int, timestamp_ms: int) -> bytes:
        base = (seq - 1) * self.STEPS
        metrics = ",".join(f'{head}{timestamp_ms},"step":{base + i}}}' for i, head in self.items)
        return f'{{"run_id":"{self.run_id}","metrics":[{metrics}]}}'.encode()


def report_json(seed: int) -> str:
    """The `metrics` JSON our master stores for one report."""
    avg, batches = report_metrics(random.Random(seed))
    return json.dumps({"avg_metrics": avg, "batch_metrics": batches})


def now() -> datetime:
    return datetime.now(UTC)
