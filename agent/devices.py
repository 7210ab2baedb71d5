"""Which devices become this agent's slots (Determined's agent/internal/detect, reference §3.5).

Order of decision: artificial slots win; `none` gives no slots; `cuda` lists GPUs with
nvidia-smi; `cpu` is one slot for the whole machine; `auto` is cuda when nvidia-smi lists a GPU,
else cpu. A missing nvidia-smi means "no GPUs", not an error. Parsing is pure; the subprocess and
the /proc read happen only in `detect_devices`.
"""

from __future__ import annotations

import csv
import io
import logging
import platform
import subprocess
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.protocol import Device, DeviceType

log = logging.getLogger("agent.devices")

NVIDIA_SMI_QUERY = ("--query-gpu=index,name,uuid", "--format=csv,noheader")
ARTIFICIAL_BRAND = "Artificial"
# uuid5 namespace for artificial slots: the same agent id always gets the same slot UUIDs, so a
# restarted agent re-registers identical devices (the master refuses a changed device set).
_ARTIFICIAL_NAMESPACE = uuid.UUID("6c1c1a8e-52f4-4d7a-9d5e-2b8f4f0e7a31")
NVIDIA_SMI_TIMEOUT_S = 30.0


class DeviceError(RuntimeError):
    """Detection asked for explicitly (slot_type cuda) could not run."""


@dataclass(frozen=True)
class SmiResult:
    """What running nvidia-smi gave: None when the binary does not exist."""

    returncode: int
    stdout: str
    stderr: str = ""


RunSmi = Callable[[Sequence[str]], SmiResult | None]


def artificial_devices(count: int, agent_id: str) -> tuple[Device, ...]:
    return tuple(
        Device(
            id=i,
            brand=ARTIFICIAL_BRAND,
            uuid=str(uuid.uuid5(_ARTIFICIAL_NAMESPACE, f"{agent_id}/{i}")),
            type=DeviceType.CPU,
        )
        for i in range(count)
    )


def parse_nvidia_smi(text: str) -> tuple[Device, ...]:
    """Rows of `index, name, uuid` (csv,noheader); blank lines skipped, bad rows refused."""
    devices = []
    for row in csv.reader(io.StringIO(text), skipinitialspace=True):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != 3:
            raise DeviceError(f"nvidia-smi printed an unexpected line: {','.join(row)!r}")
        index, name, gpu_uuid = (cell.strip() for cell in row)
        try:
            device_id = int(index)
        except ValueError:
            raise DeviceError(f"nvidia-smi printed a non-numeric GPU index {index!r}") from None
        devices.append(Device(id=device_id, brand=name, uuid=gpu_uuid, type=DeviceType.CUDA))
    return tuple(devices)


def nvidia_smi_args(visible_gpus: str | None) -> tuple[str, ...]:
    """The query; `visible_gpus` ("0,2" or UUIDs) becomes `--id=` as in Determined."""
    ids = ",".join(part.strip() for part in (visible_gpus or "").split(",") if part.strip())
    return (*NVIDIA_SMI_QUERY, f"--id={ids}") if ids else NVIDIA_SMI_QUERY


def parse_cpuinfo(text: str, fallback_vendor: str = "") -> tuple[str, str]:
    """(vendor id, brand) of the machine from /proc/cpuinfo.

    The brand counts logical CPUs per model, e.g. "8 x AMD EPYC 7B13"; several models are joined
    with ", ". Machines whose cpuinfo names no model (some ARM boards) fall back to the
    architecture.
    """
    vendors: list[str] = []
    models: Counter[str] = Counter()
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip().lower()] = value.strip()
        if "processor" not in fields:
            continue
        vendor = fields.get("vendor_id") or fields.get("cpu implementer") or ""
        if vendor and vendor not in vendors:
            vendors.append(vendor)
        model = fields.get("model name") or fields.get("cpu model") or fields.get("hardware")
        models[model or fallback_vendor or "cpu"] += 1
    brand = ", ".join(f"{count} x {model}" for model, count in models.items())
    return (vendors[0] if vendors else fallback_vendor or "cpu"), brand


def cpu_device(cpuinfo: str, fallback_vendor: str = "") -> Device:
    vendor, brand = parse_cpuinfo(cpuinfo, fallback_vendor)
    return Device(id=0, brand=brand or vendor, uuid=vendor, type=DeviceType.CPU)


def run_nvidia_smi(args: Sequence[str]) -> SmiResult | None:
    """Run nvidia-smi from PATH; None when it is not installed."""
    try:
        done = subprocess.run(
            ["nvidia-smi", *args],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        return None
    except subprocess.TimeoutExpired:
        return SmiResult(returncode=-1, stdout="", stderr="nvidia-smi timed out")
    return SmiResult(done.returncode, done.stdout, done.stderr)


def cuda_devices(visible_gpus: str | None, run: RunSmi, *, required: bool) -> tuple[Device, ...]:
    result = run(nvidia_smi_args(visible_gpus))
    if result is None:
        log.info("nvidia-smi not found: no GPUs")
        return ()
    if result.returncode != 0:
        reason = (result.stderr or result.stdout).strip() or f"exit code {result.returncode}"
        if required:
            raise DeviceError(f"nvidia-smi failed: {reason}")
        log.warning("nvidia-smi failed (%s): treating this machine as having no GPUs", reason)
        return ()
    return parse_nvidia_smi(result.stdout)


def detect_devices(
    *,
    slot_type: str,
    artificial_slots: int,
    agent_id: str,
    visible_gpus: str | None = None,
    run: RunSmi = run_nvidia_smi,
    cpuinfo_path: Path = Path("/proc/cpuinfo"),
) -> tuple[Device, ...]:
    """The slots this agent registers. Raises DeviceError when slot_type cuda cannot be run."""
    if artificial_slots > 0:
        return artificial_devices(artificial_slots, agent_id)
    if slot_type == "none":
        return ()
    if slot_type in ("cuda", "gpu"):
        return cuda_devices(visible_gpus, run, required=True)
    if slot_type == "auto":
        gpus = cuda_devices(visible_gpus, run, required=False)
        if gpus:
            return gpus
    try:
        cpuinfo = cpuinfo_path.read_text()
    except OSError:
        cpuinfo = ""
    return (cpu_device(cpuinfo, platform.machine()),)
