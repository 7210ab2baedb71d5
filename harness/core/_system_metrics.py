"""System metrics as Determined's profiler samples them, read from /proc with the standard
library (the harness runs in any image: no psutil), GPUs through NVML when `pynvml` imports,
else `nvidia-smi`, else none.

Groups and names are Determined 0.38's (determined/core/_profiler.py), so its web UI and code
that reads the stored metrics find them: `cpu` {cpu_util_simple: %}, `memory` {memory_free:
bytes}, `disk` {disk_iops, disk_throughput_read, disk_throughput_write: per second, and per
mount path {disk_util: %}}, `network` {net_throughput_sent, net_throughput_recv: bytes per
second}, `gpu` {per GPU UUID: {gpu_util: %, gpu_free_memory: bytes}}.

The parsers and the rate arithmetic are pure functions of /proc text, tested with fixed text.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

GROUPS = ("gpu", "cpu", "memory", "disk", "network")
DISK_PATHS = ("/", "/determined_shared_fs")
SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own size


def cpu_times(stat_text: str) -> tuple[int, int]:
    """(busy, total) jiffies from /proc/stat's aggregate `cpu` line (iowait counts as idle)."""
    for line in stat_text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            values = [int(v) for v in parts[1:]]
            idle = values[3] + (values[4] if len(values) > 4 else 0)
            # guest times are already inside user and nice
            total = sum(values[:8])
            return total - idle, total
    raise ValueError("no aggregate cpu line in /proc/stat")


def cpu_percent(before: tuple[int, int], after: tuple[int, int]) -> float:
    busy, total = after[0] - before[0], after[1] - before[1]
    return 100.0 * busy / total if total > 0 else 0.0


def memory_available(meminfo_text: str) -> int:
    """MemAvailable in bytes (what psutil's virtual_memory().available reports)."""
    fields: dict[str, int] = {}
    for line in meminfo_text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            fields[name] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    if "MemAvailable" in fields:
        return fields["MemAvailable"]
    return fields.get("MemFree", 0) + fields.get("Buffers", 0) + fields.get("Cached", 0)


# Virtual block devices: their I/O is already counted on the disks beneath them.
_VIRTUAL = ("loop", "ram", "zram", "dm-", "md", "sr")


@dataclass(frozen=True)
class DiskCounters:
    reads: int
    writes: int
    read_bytes: int
    write_bytes: int


def disk_counters(diskstats_text: str) -> DiskCounters:
    """Whole disks only, as psutil sums them: a partition (sda1 under sda, nvme0n1p1 under
    nvme0n1) repeats its disk's counts, and virtual devices repeat their disks'."""
    rows = [line.split() for line in diskstats_text.splitlines() if len(line.split()) >= 10]
    names = {r[2] for r in rows}
    reads = writes = read_bytes = write_bytes = 0
    for r in rows:
        name = r[2]
        if name.startswith(_VIRTUAL) or any(n != name and name.startswith(n) for n in names):
            continue
        reads += int(r[3])
        read_bytes += int(r[5]) * SECTOR_BYTES
        writes += int(r[7])
        write_bytes += int(r[9]) * SECTOR_BYTES
    return DiskCounters(reads, writes, read_bytes, write_bytes)


def net_counters(netdev_text: str) -> tuple[int, int]:
    """(bytes sent, bytes received) over every interface, as psutil's net_io_counters()."""
    sent = recv = 0
    for line in netdev_text.splitlines()[2:]:
        _name, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) >= 9:
            recv += int(parts[0])
            sent += int(parts[8])
    return sent, recv


def rate(before: float, after: float, seconds: float) -> float:
    return (after - before) / seconds if seconds > 0 else 0.0


def average(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Values averaged key by key, one level of nesting (Determined's aggregation)."""
    sums: dict[str, Any] = {}
    for sample in samples:
        for key, value in sample.items():
            if isinstance(value, dict):
                inner = sums.setdefault(key, {})
                for k, v in value.items():
                    inner[k] = inner.get(k, 0) + v
            else:
                sums[key] = sums.get(key, 0) + value
    n = len(samples)
    return {
        key: ({k: v / n for k, v in value.items()} if isinstance(value, dict) else value / n)
        for key, value in sums.items()
    }


def parse_nvidia_smi(csv_text: str) -> dict[str, dict[str, float]]:
    """`nvidia-smi --query-gpu=uuid,utilization.gpu,memory.free --format=csv,noheader,nounits`
    (memory in MiB) -> {uuid: {gpu_util, gpu_free_memory (bytes)}}."""
    out: dict[str, dict[str, float]] = {}
    for line in csv_text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            continue
        try:
            out[parts[0]] = {
                "gpu_util": float(parts[1]),
                "gpu_free_memory": float(parts[2]) * 1024 * 1024,
            }
        except ValueError:
            continue
    return out


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


GpuReader = typing.Callable[[], typing.Dict[str, typing.Dict[str, float]]]  # noqa: UP006 (3.8)


def gpu_reader() -> GpuReader | None:
    """How GPUs are read here: NVML, nvidia-smi, or None (no GPU metrics are collected)."""
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        handles = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            handles[uuid.decode() if isinstance(uuid, bytes) else str(uuid)] = handle

        def nvml() -> dict[str, dict[str, float]]:
            return {
                uuid: {
                    "gpu_util": float(pynvml.nvmlDeviceGetUtilizationRates(h).gpu),
                    "gpu_free_memory": float(pynvml.nvmlDeviceGetMemoryInfo(h).free),
                }
                for uuid, h in handles.items()
            }

        nvml()
        return nvml
    except Exception:
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    query = [smi, "--query-gpu=uuid,utilization.gpu,memory.free", "--format=csv,noheader,nounits"]

    def run_smi() -> dict[str, dict[str, float]]:
        done = subprocess.run(query, capture_output=True, text=True, timeout=10, check=False)
        return parse_nvidia_smi(done.stdout) if done.returncode == 0 else {}

    try:
        return run_smi if run_smi() else None
    except (OSError, subprocess.SubprocessError):
        return None


@dataclass
class SystemSampler:
    """Takes one sample of every group per call; rates are since the previous call."""

    proc: str = "/proc"
    disk_paths: tuple[str, ...] = DISK_PATHS
    gpus: GpuReader | None = None
    clock: Callable[[], float] = time.monotonic
    _last: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.disk_paths = tuple(p for p in self.disk_paths if os.path.isdir(p))
        self._last = self._counters()

    def _counters(self) -> dict[str, Any]:
        return {
            "at": self.clock(),
            "cpu": cpu_times(_read(f"{self.proc}/stat")),
            "disk": disk_counters(_read(f"{self.proc}/diskstats")),
            "net": net_counters(_read(f"{self.proc}/net/dev")),
        }

    def sample(self) -> dict[str, dict[str, Any]]:
        now = self._counters()
        last, self._last = self._last, now
        seconds = now["at"] - last["at"]
        d0, d1 = last["disk"], now["disk"]
        disk: dict[str, Any] = {
            "disk_iops": rate(d0.reads + d0.writes, d1.reads + d1.writes, seconds),
            "disk_throughput_read": rate(d0.read_bytes, d1.read_bytes, seconds),
            "disk_throughput_write": rate(d0.write_bytes, d1.write_bytes, seconds),
        }
        for path in self.disk_paths:
            usage = shutil.disk_usage(path)
            disk[path] = {"disk_util": 100.0 * usage.used / usage.total if usage.total else 0.0}
        out = {
            "cpu": {"cpu_util_simple": cpu_percent(last["cpu"], now["cpu"])},
            "memory": {"memory_free": memory_available(_read(f"{self.proc}/meminfo"))},
            "disk": disk,
            "network": {
                "net_throughput_sent": rate(last["net"][0], now["net"][0], seconds),
                "net_throughput_recv": rate(last["net"][1], now["net"][1], seconds),
            },
        }
        if self.gpus is not None:
            out["gpu"] = dict(self.gpus())
        return out
