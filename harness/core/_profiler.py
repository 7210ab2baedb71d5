"""``core_context.profiler``: Determined's system-metrics profiler, and
``core_context.experimental`` (which checkpoints and model versions a task uses).

``profiler.on()`` starts a thread on the chief of each node (local rank 0; metrics are per
machine) that samples every `sampling_interval` seconds and, every `samples_per_report`
samples, reports their average to the master: one report per group (`cpu`, `memory`, `disk`,
`network`, and `gpu` where GPUs are readable), its metrics keyed by the agent's id, as
Determined's ProfilerContext does. PyTorchTrial turns it on when the experiment config says
`profiling.enabled: true`; Core API code calls ``on()`` itself.
"""

from __future__ import annotations

import logging
import threading
import typing
from collections.abc import Callable
from typing import Any

from harness.core import _system_metrics as system

logger = logging.getLogger("harness.core")

# (group, steps, metrics) -> None: TrainContext's report of any group. The steps are the
# report's sequence number: the master keys reports by (trial, group, steps, run).
Report = typing.Callable[[str, int, typing.Dict[str, Any]], None]  # noqa: UP006 (3.8)


class ProfilerContext:
    """Samples system metrics in a background thread between ``on()`` and ``off()``."""

    def __init__(
        self,
        agent_id: str,
        report: Report,
        local_rank: int = 0,
        sampler_factory: Callable[[], system.SystemSampler] | None = None,
    ) -> None:
        self._agent_id = agent_id or "agent"
        self._report = report
        self._local_rank = local_rank
        self._sampler_factory = sampler_factory or (
            lambda: system.SystemSampler(gpus=system.gpu_reader())
        )
        self._collector: _Collector | None = None

    def on(self, sampling_interval: float = 1, samples_per_report: int = 10) -> None:
        """Start sampling (idempotent). Determined's argument checks and messages."""
        if self._collector is not None:
            return
        if sampling_interval < 0.1:
            raise ValueError(f"Sampling interval must be > 0.1, got {sampling_interval}.")
        if not isinstance(samples_per_report, int) or samples_per_report < 1:
            raise ValueError(
                "Samples per report specifies the number of samples to aggregate before "
                "reporting the metric. It must be an int > 1, but was specified as "
                f"{samples_per_report}."
            )
        if self._local_rank != 0:
            return  # metrics are per machine: only each node's chief samples
        logger.info("Starting system metrics profiling.")
        self._collector = _Collector(
            self._sampler_factory(),
            self._agent_id,
            self._report,
            float(sampling_interval),
            samples_per_report,
        )
        self._collector.start()

    def off(self) -> None:
        """Stop sampling (idempotent); samples not yet reported are reported first."""
        collector, self._collector = self._collector, None
        if collector is not None:
            logger.info("Stopping system metrics profiling.")
            collector.stop()

    def _close(self) -> None:
        self.off()

    def __enter__(self) -> ProfilerContext:
        return self

    def __exit__(self, *_: object) -> None:
        self.off()


class _Collector(threading.Thread):
    def __init__(
        self,
        sampler: system.SystemSampler,
        agent_id: str,
        report: Report,
        interval_s: float,
        per_report: int,
    ) -> None:
        super().__init__(name="system-metrics-profiler", daemon=True)
        self._sampler = sampler
        self._agent_id = agent_id
        self._report = report
        self._interval_s = interval_s
        self._per_report = per_report
        self._halt = threading.Event()
        self._samples: list[dict[str, dict[str, Any]]] = []
        self._reports = 0

    def run(self) -> None:
        try:
            while not self._halt.wait(self._interval_s):
                self._samples.append(self._sampler.sample())
                if len(self._samples) >= self._per_report:
                    self._flush()
            self._flush()
        except Exception as exc:  # a profiler never stops training
            logger.warning("system metrics profiling stopped: %s", exc)

    def _flush(self) -> None:
        samples, self._samples = self._samples, []
        if not samples:
            return
        self._reports += 1
        for group in system.GROUPS:
            values = [s[group] for s in samples if s.get(group)]
            if values:
                self._report(group, self._reports, {self._agent_id: system.average(values)})

    def stop(self) -> None:
        self._halt.set()
        if self is not threading.current_thread():
            self.join(timeout=30)


class DummyProfilerContext:
    """Off a cluster (or for tasks other than trials): ``on()`` and ``off()`` do nothing."""

    def on(self, sampling_interval: float = 1, samples_per_report: int = 10) -> None:
        pass

    def off(self) -> None:
        pass

    def _close(self) -> None:
        pass


class DummyExperimentalCoreContext:
    """Determined's ``core_context.experimental`` off a cluster: the reports go nowhere."""

    def report_task_using_checkpoint(self, checkpoint: Any) -> None:
        pass

    def report_task_using_model_version(self, model_version: Any) -> None:
        pass
