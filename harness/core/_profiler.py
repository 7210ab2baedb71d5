"""``core_context.profiler`` and ``core_context.experimental``: Determined's names, without the
features behind them.

Determined's ProfilerContext samples system metrics (CPU, GPU, memory, disk, network) and
reports them to the master; ExperimentalCoreContext records which checkpoints and model versions
a task uses. Resolute implements neither yet: every context carries the Dummy forms, so code that
calls ``core_context.profiler.on()`` runs (and logs once that nothing is sampled).
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("harness.core")


class DummyProfilerContext:
    """``on()`` and ``off()`` do nothing: system metrics are not sampled."""

    def __init__(self) -> None:
        self._warned = False

    def on(self, sampling_interval: int = 1, samples_per_report: int = 10) -> None:
        if not self._warned:
            self._warned = True
            logger.info("system-metrics profiling is not available: profiler.on() does nothing")

    def off(self) -> None:
        pass


class DummyExperimentalCoreContext:
    """Determined's ``core_context.experimental`` off a cluster: the reports go nowhere."""

    def report_task_using_checkpoint(self, checkpoint: Any) -> None:
        pass

    def report_task_using_model_version(self, model_version: Any) -> None:
        pass
