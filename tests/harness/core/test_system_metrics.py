"""System metrics read from /proc text as Determined's profiler (psutil) reports them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core import _system_metrics as sm

STAT = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 100 0 50 800 50 0 0 0 0 0\nintr 1\n"
STAT_LATER = "cpu  160 0 70 900 50 0 0 0 0 0\n"
MEMINFO = "MemTotal:       16000000 kB\nMemFree:         1000 kB\nMemAvailable:    8000000 kB\n"
DISKSTATS = """\
   7       0 loop0 99 0 99 0 99 0 99 0 0 0 0
   8       0 sda 10 0 100 0 20 0 200 0 0 0 0
   8       1 sda1 10 0 100 0 20 0 200 0 0 0 0
 259       0 nvme0n1 5 0 10 0 5 0 10 0 0 0 0
 259       1 nvme0n1p1 5 0 10 0 5 0 10 0 0 0 0
 253       0 dm-0 7 0 7 0 7 0 7 0 0 0 0
"""
# /proc/net/dev: two header lines, then "iface: rx bytes, 7 more rx fields, tx bytes, …".
NETDEV = (
    "Inter-|   Receive |  Transmit\n"
    " face |bytes packets errs drop fifo frame compressed multicast|bytes packets\n"
    "    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n"
    "  eth0: 5000 50 0 0 0 0 0 0 3000 30 0 0 0 0 0 0\n"
)


def test_cpu_times_and_percent() -> None:
    before, after = sm.cpu_times(STAT), sm.cpu_times(STAT_LATER)
    assert before == (150, 1000)  # iowait counts as idle
    assert sm.cpu_percent(before, after) == pytest.approx(100 * 80 / 180)
    assert sm.cpu_percent(before, before) == 0.0


def test_memory_available_in_bytes() -> None:
    assert sm.memory_available(MEMINFO) == 8_000_000 * 1024
    assert sm.memory_available("MemFree: 2 kB\nBuffers: 1 kB\nCached: 1 kB\n") == 4 * 1024


def test_disk_counters_count_whole_disks_once() -> None:
    got = sm.disk_counters(DISKSTATS)
    assert got == sm.DiskCounters(reads=15, writes=25, read_bytes=110 * 512, write_bytes=210 * 512)


def test_net_counters_sum_interfaces() -> None:
    assert sm.net_counters(NETDEV) == (4000, 6000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "GPU-a, 37, 1024\nGPU-b, 0, 2\n",
            {"GPU-a": (37.0, 1024 * 2**20), "GPU-b": (0.0, 2 * 2**20)},
        ),
        ("GPU-a, [N/A], 5\n", {}),
        ("", {}),
    ],
)
def test_parse_nvidia_smi(text: str, expected: dict[str, tuple[float, float]]) -> None:
    got = sm.parse_nvidia_smi(text)
    assert {k: (v["gpu_util"], v["gpu_free_memory"]) for k, v in got.items()} == expected


def test_average_one_level_deep() -> None:
    samples = [{"a": 1, "/": {"disk_util": 10}}, {"a": 3, "/": {"disk_util": 30}}]
    assert sm.average(samples) == {"a": 2, "/": {"disk_util": 20}}


@given(st.lists(st.floats(min_value=0, max_value=1e9), min_size=1, max_size=20))
def test_average_of_equal_samples_is_the_sample(values: list[float]) -> None:
    got = sm.average([{"x": values[0]} for _ in values])["x"]
    assert got == pytest.approx(values[0])


def test_sampler_reports_rates_between_samples(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "stat").write_text(STAT)
    (proc / "meminfo").write_text(MEMINFO)
    (proc / "diskstats").write_text(DISKSTATS)
    (proc / "net" / "dev").write_text(NETDEV)
    ticks = iter([0.0, 2.0])
    gpus = {"GPU-x": {"gpu_util": 50.0, "gpu_free_memory": 1.0}}
    sampler = sm.SystemSampler(
        proc=str(proc),
        disk_paths=(str(tmp_path), "/no/such/path"),
        gpus=lambda: gpus,
        clock=lambda: next(ticks),
    )
    (proc / "stat").write_text(STAT_LATER)
    (proc / "net" / "dev").write_text(NETDEV.replace("5000", "7000").replace("3000", "3400"))
    got = sampler.sample()
    assert got["cpu"]["cpu_util_simple"] == pytest.approx(100 * 80 / 180)
    assert got["memory"] == {"memory_free": 8_000_000 * 1024}
    assert got["network"] == {"net_throughput_sent": 200.0, "net_throughput_recv": 1000.0}
    assert got["disk"]["disk_iops"] == 0.0 and set(got["disk"]) == {
        "disk_iops",
        "disk_throughput_read",
        "disk_throughput_write",
        str(tmp_path),
    }
    assert 0 <= got["disk"][str(tmp_path)]["disk_util"] <= 100
    assert got["gpu"] == gpus


def test_this_machines_proc_reads() -> None:
    got = sm.SystemSampler().sample()
    assert set(got) >= {"cpu", "memory", "disk", "network"}
    assert got["memory"]["memory_free"] > 0
