"""Device detection: pure parsing tables, and a fake nvidia-smi put first on PATH."""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest

from agent.devices import (
    ARTIFICIAL_BRAND,
    DeviceError,
    artificial_devices,
    detect_devices,
    nvidia_smi_args,
    parse_cpuinfo,
    parse_nvidia_smi,
)
from agent.protocol import Device, DeviceType

H100 = "NVIDIA H100 80GB HBM3"


class TestNvidiaSmiParsing:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("", []),
            ("\n\n", []),
            (f"0, {H100}, GPU-aaa\n", [(0, H100, "GPU-aaa")]),
            (
                "0, Tesla T4, GPU-1\n1, Tesla T4, GPU-2\n",
                [(0, "Tesla T4", "GPU-1"), (1, "Tesla T4", "GPU-2")],
            ),
            # --id=2,3 keeps the machine's indexes
            ("2, A, GPU-2\n3, A, GPU-3", [(2, "A", "GPU-2"), (3, "A", "GPU-3")]),
            ('0, "Odd, Name", GPU-x\n', [(0, "Odd, Name", "GPU-x")]),
        ],
    )
    def test_rows(self, text: str, expected: list[tuple[int, str, str]]):
        devices = parse_nvidia_smi(text)
        assert [(d.id, d.brand, d.uuid) for d in devices] == expected
        assert all(d.type is DeviceType.CUDA for d in devices)

    @pytest.mark.parametrize(
        "text",
        ["0, only two\n", "zero, T4, GPU-1\n", "No devices were found\n"],
    )
    def test_unexpected_output_is_an_error(self, text: str):
        with pytest.raises(DeviceError, match="nvidia-smi"):
            parse_nvidia_smi(text)

    @pytest.mark.parametrize(
        ("visible", "id_arg"),
        [(None, None), ("", None), ("0,2", "--id=0,2"), (" 1 , GPU-x ", "--id=1,GPU-x")],
    )
    def test_visible_gpus_become_id(self, visible: str | None, id_arg: str | None):
        args = nvidia_smi_args(visible)
        assert args[:2] == ("--query-gpu=index,name,uuid", "--format=csv,noheader")
        assert (args[2] if len(args) == 3 else None) == id_arg


INTEL = textwrap.dedent(
    """\
    processor\t: 0
    vendor_id\t: GenuineIntel
    model name\t: Intel(R) Xeon(R) CPU @ 2.20GHz

    processor\t: 1
    vendor_id\t: GenuineIntel
    model name\t: Intel(R) Xeon(R) CPU @ 2.20GHz
    """
)
MIXED = textwrap.dedent(
    """\
    processor : 0
    vendor_id : AuthenticAMD
    model name : AMD EPYC 7B13

    processor : 1
    vendor_id : AuthenticAMD
    model name : AMD EPYC 7B13

    processor : 2
    vendor_id : AuthenticAMD
    model name : AMD EPYC 9654
    """
)
ARM = textwrap.dedent(
    """\
    processor\t: 0
    BogoMIPS\t: 48.00
    CPU implementer\t: 0x41

    processor\t: 1
    BogoMIPS\t: 48.00
    CPU implementer\t: 0x41

    Hardware\t: BCM2835
    """
)


class TestCpuInfo:
    @pytest.mark.parametrize(
        ("text", "vendor", "brand"),
        [
            (INTEL, "GenuineIntel", "2 x Intel(R) Xeon(R) CPU @ 2.20GHz"),
            (MIXED, "AuthenticAMD", "2 x AMD EPYC 7B13, 1 x AMD EPYC 9654"),
            (ARM, "0x41", "2 x aarch64"),
            ("", "aarch64", ""),
        ],
    )
    def test_vendor_and_brand(self, text: str, vendor: str, brand: str):
        assert parse_cpuinfo(text, "aarch64") == (vendor, brand)

    def test_cpu_is_one_slot_for_the_machine(self, tmp_path: Path):
        info = tmp_path / "cpuinfo"
        info.write_text(MIXED)
        (device,) = detect_devices(
            slot_type="cpu", artificial_slots=0, agent_id="a", cpuinfo_path=info
        )
        assert device == Device(
            id=0,
            brand="2 x AMD EPYC 7B13, 1 x AMD EPYC 9654",
            uuid="AuthenticAMD",
            type=DeviceType.CPU,
        )


class TestArtificial:
    def test_stable_per_agent_and_distinct_between_agents(self):
        a1, a2, b = (
            artificial_devices(3, "a"),
            artificial_devices(3, "a"),
            artificial_devices(3, "b"),
        )
        assert a1 == a2
        assert [d.id for d in a1] == [0, 1, 2]
        assert len({d.uuid for d in a1 + b}) == 6
        assert {d.brand for d in a1} == {ARTIFICIAL_BRAND}
        assert {d.type for d in a1} == {DeviceType.CPU}

    def test_win_over_slot_type(self):
        devices = detect_devices(slot_type="none", artificial_slots=2, agent_id="a")
        assert devices == artificial_devices(2, "a")


@pytest.fixture
def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Install an nvidia-smi script first on PATH; it logs its argv to `calls`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    def install(stdout: str, code: int = 0) -> Path:
        script = bin_dir / "nvidia-smi"
        (tmp_path / "smi-out").write_text(stdout)
        script.write_text(
            f'#!/bin/sh\necho "$@" >> "{calls}"\ncat "{tmp_path / "smi-out"}"\nexit {code}\n'
        )
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        return calls

    return install


def no_gpu_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty PATH: no nvidia-smi (real or fake) can be found."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


class TestDetectWithNvidiaSmi:
    def test_auto_finds_gpus(self, fake_smi, tmp_path: Path):
        calls = fake_smi(f"0, {H100}, GPU-a\n1, {H100}, GPU-b\n")
        devices = detect_devices(slot_type="auto", artificial_slots=0, agent_id="a")
        assert [(d.id, d.uuid, d.type) for d in devices] == [
            (0, "GPU-a", DeviceType.CUDA),
            (1, "GPU-b", DeviceType.CUDA),
        ]
        assert calls.read_text().split() == ["--query-gpu=index,name,uuid", "--format=csv,noheader"]

    def test_visible_gpus_are_passed_as_id(self, fake_smi):
        calls = fake_smi("1, T4, GPU-b\n")
        devices = detect_devices(
            slot_type="cuda", artificial_slots=0, agent_id="a", visible_gpus="1"
        )
        assert [d.id for d in devices] == [1]
        assert calls.read_text().split()[-1] == "--id=1"

    def test_auto_without_gpus_is_one_cpu_slot(self, fake_smi):
        fake_smi("")
        (device,) = detect_devices(slot_type="auto", artificial_slots=0, agent_id="a")
        assert device.type is DeviceType.CPU and device.id == 0

    def test_missing_nvidia_smi_means_no_gpus(self, tmp_path: Path, monkeypatch):
        no_gpu_path(tmp_path, monkeypatch)
        assert detect_devices(slot_type="cuda", artificial_slots=0, agent_id="a") == ()
        (cpu,) = detect_devices(slot_type="auto", artificial_slots=0, agent_id="a")
        assert cpu.type is DeviceType.CPU

    def test_failing_nvidia_smi(self, fake_smi):
        fake_smi("NVIDIA-SMI has failed because it couldn't communicate with the driver\n", 9)
        with pytest.raises(DeviceError, match="couldn't communicate"):
            detect_devices(slot_type="cuda", artificial_slots=0, agent_id="a")
        (cpu,) = detect_devices(slot_type="auto", artificial_slots=0, agent_id="a")
        assert cpu.type is DeviceType.CPU

    def test_none_never_runs_nvidia_smi(self, fake_smi):
        calls = fake_smi("0, T4, GPU-a\n")
        assert detect_devices(slot_type="none", artificial_slots=0, agent_id="a") == ()
        assert not calls.exists()
