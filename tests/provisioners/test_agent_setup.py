"""The agent start-up script: rendering, a golden copy, quoting, and runs of the real script in a
sandbox with a stand-in `det-agent` that records what it was given.

Golden file (reference §2.10 A1: cuda, a certificate, pool "test-pool", 5 tries 5 s apart):
tests/provisioners/golden/agent_setup_aws_cuda.sh. After an intended change to the template,
regenerate it and review the diff:

    RESOLUTE_UPDATE_GOLDEN=1 .venv/bin/pytest tests/provisioners/test_agent_setup.py -k golden
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioners.agent_setup import (
    AgentSetup,
    MasterAddress,
    SetupError,
    master_address,
    render_setup_script,
    slot_type_for,
    template_text,
)
from tests.support.fake_metadata import FakeMetadata

GOLDEN = Path(__file__).parent / "golden" / "agent_setup_aws_cuda.sh"
CERT = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
HOSTILE = "x'$(touch PWNED)\"`touch PWNED2`;touch PWNED3 \\ $HOME\n|& *"
ASSIGNED = [
    "CLOUD", "MASTER_HOST", "MASTER_PORT", "MASTER_TLS", "MASTER_CERT_NAME", "MASTER_CERT_B64",
    "RESOURCE_POOL", "SLOT_TYPE", "RECONNECT_ATTEMPTS", "RECONNECT_BACKOFF",
    "STARTUP_SCRIPT_B64", "AGENT_CONFIG_B64", "CONTAINER_STARTUP_SCRIPT_B64",
    "AGENT_INSTALL_DEFAULT", "AGENT_IMAGE", "AGENT_NETWORK", "AGENT_DOCKER_RUNTIME",
    "METADATA_URL_DEFAULT",
]  # fmt: skip


def golden_setup() -> AgentSetup:
    return AgentSetup(
        cloud="aws",
        master_url="https://master.example.com:8443",
        resource_pool="test-pool",
        slot_type="cuda",
        master_cert=CERT,
        master_cert_name="master.example.com",
        agent_reconnect_attempts=5,
        agent_reconnect_backoff=5,
        startup_script="echo hello from the pool\n",
        agent_config_file_contents="log:\n  level: debug\n",
        container_startup_script="echo hello from a task\n",
        agent_install_command="python3 -m pip install resolute",
        agent_docker_image="resolute/agent:0.1.0",
    )


def assignments(script: str) -> dict[str, str]:
    """The values bash gives the rendered assignments (the block is run, the rest is not)."""
    after = script.split("# --- rendered for the pool", 1)[1].split("\n", 1)[1]
    block = after.split("# -----", 1)[0]
    dump = 'printf "%s\\0" ' + " ".join(f'"${name}"' for name in ASSIGNED)
    out = subprocess.run(
        ["bash", "-c", block + "\n" + dump], capture_output=True, check=True, timeout=10
    ).stdout
    return dict(zip(ASSIGNED, out.decode().split("\0")[:-1], strict=True))


class TestRender:
    def test_golden(self):
        script = render_setup_script(golden_setup())
        if os.environ.get("RESOLUTE_UPDATE_GOLDEN"):
            GOLDEN.parent.mkdir(exist_ok=True)
            GOLDEN.write_text(script)
        assert script == GOLDEN.read_text(), "regenerate: see this module's docstring"

    def test_every_placeholder_is_filled(self):
        script = render_setup_script(golden_setup())
        assert "@@" not in script
        assert template_text().count("@@{") == len(ASSIGNED)

    @pytest.mark.parametrize(
        ("gpus", "cpu_allowed", "slot_type"),
        [(8, False, "cuda"), (1, True, "cuda"), (0, True, "cpu"), (0, False, "none")],
    )
    def test_slot_type_comes_from_the_provider(self, gpus: int, cpu_allowed: bool, slot_type: str):
        assert slot_type_for(gpus, cpu_allowed) == slot_type

    @pytest.mark.parametrize(
        ("url", "expected"),
        [
            ("http://10.0.0.5:8080", MasterAddress(False, "10.0.0.5", 8080)),
            ("https://master.example", MasterAddress(True, "master.example", 443)),
            ("http://master.example/", MasterAddress(False, "master.example", 80)),
        ],
    )
    def test_master_address(self, url: str, expected: MasterAddress):
        assert master_address(url) == expected

    @pytest.mark.parametrize(
        ("change", "error"),
        [
            ({"master_url": "ftp://m"}, "scheme must be http or https"),
            ({"master_url": "http://m:8080/api"}, "must not have a path"),
            ({"master_url": "http://m:99999"}, "invalid port"),
            ({"master_url": "http://:80"}, "no host"),
            ({"cloud": "azure"}, "cloud"),
            ({"slot_type": "rocm"}, "slot_type"),
            ({"resource_pool": ""}, "resource_pool"),
            ({"agent_reconnect_attempts": -1}, "agent_reconnect_attempts"),
            ({"metadata_url": "169.254.169.254"}, "metadata_url"),
            ({"resource_pool": "a\0b"}, "resource_pool must not contain a NUL"),
        ],
    )
    def test_bad_inputs(self, change: dict[str, Any], error: str):
        values = {**vars(golden_setup()), **change}
        with pytest.raises(SetupError, match=error):
            render_setup_script(AgentSetup(**values))

    def test_values_reach_bash_as_written(self):
        setup = AgentSetup(
            cloud="gcp",
            master_url="http://master.internal:8080",
            resource_pool=HOSTILE,
            slot_type="cpu",
            master_cert_name=HOSTILE,
            agent_reconnect_backoff=0.5,
            agent_install_command=HOSTILE,
            agent_docker_image=HOSTILE,
            agent_docker_network=HOSTILE,
            agent_docker_runtime=HOSTILE,
            metadata_url="http://127.0.0.1:9/",
        )
        got = assignments(render_setup_script(setup))
        assert got["RESOURCE_POOL"] == HOSTILE
        assert got["MASTER_CERT_NAME"] == HOSTILE
        assert got["AGENT_INSTALL_DEFAULT"] == HOSTILE
        assert got["AGENT_IMAGE"] == got["AGENT_NETWORK"] == got["AGENT_DOCKER_RUNTIME"] == HOSTILE
        assert got["RECONNECT_BACKOFF"] == "0.5"
        assert got["METADATA_URL_DEFAULT"] == "http://127.0.0.1:9"
        assert got["MASTER_TLS"] == "false" and got["MASTER_CERT_B64"] == ""
        assert not list(Path.cwd().glob("PWNED*"))

    @settings(max_examples=40, deadline=None)
    @given(pool=st.text(st.characters(exclude_characters="\0", codec="utf-8"), min_size=1))
    def test_any_text_survives_the_quoting(self, pool: str):
        setup = AgentSetup(
            cloud="aws", master_url="http://m:8080", resource_pool=pool, slot_type="none"
        )
        assert assignments(render_setup_script(setup))["RESOURCE_POOL"] == pool


def _variants() -> list[AgentSetup]:
    base = golden_setup()
    plain = AgentSetup(
        cloud="gcp", master_url="http://10.1.2.3:8080", resource_pool="p", slot_type="none"
    )
    return [
        base,
        AgentSetup(**{**vars(base), "cloud": "gcp", "slot_type": "cpu"}),
        AgentSetup(**{**vars(base), "master_url": "http://m:8080", "master_cert": ""}),
        plain,
        AgentSetup(**{**vars(plain), "cloud": "aws", "agent_config_file_contents": {"a": 1}}),
    ]


class TestShell:
    @pytest.mark.parametrize("setup", _variants(), ids=lambda s: f"{s.cloud}-{s.slot_type}")
    def test_bash_parses_every_variant(self, setup: AgentSetup, tmp_path: Path):
        path = tmp_path / "setup.sh"
        path.write_text(render_setup_script(setup))
        subprocess.run(["bash", "-n", str(path)], check=True, timeout=10)

    @pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
    @pytest.mark.parametrize("setup", _variants(), ids=lambda s: f"{s.cloud}-{s.slot_type}")
    def test_shellcheck_finds_nothing(self, setup: AgentSetup, tmp_path: Path):
        path = tmp_path / "setup.sh"
        path.write_text(render_setup_script(setup))
        result = subprocess.run(
            ["shellcheck", "--shell=bash", str(path)], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stdout


# --- the real script in a sandbox, with a det-agent that records its inputs -----------------

RECORDER = """#!{python}
import json, os, sys
root = os.environ["RESOLUTE_SETUP_ROOT"]
with open(os.path.join(root, "order.log"), "a") as log:
    log.write("agent\\n")
# Written whole and then renamed: a test that waits for agent.json (a background agent) must
# never read it half-written.
with open(os.path.join(root, "agent.json.part"), "w") as out:
    env = {{k: v for k, v in os.environ.items() if k.startswith("DET_")}}
    json.dump({{"env": env, "argv": sys.argv[1:]}}, out)
os.replace(os.path.join(root, "agent.json.part"), os.path.join(root, "agent.json"))
"""


@pytest.fixture
def metadata() -> Any:
    with FakeMetadata("i-0123abcd", "pool-vm-1") as fake:
        yield fake


def run_script(
    setup: AgentSetup, root: Path, metadata_url: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run the rendered script with a recording det-agent installed by the install hook."""
    root.mkdir(parents=True, exist_ok=True)
    recorder = root.parent / "recorder"
    recorder.write_text(RECORDER.format(python=sys.executable))
    recorder.chmod(0o755)
    script = root.parent / "setup.sh"
    script.write_text(render_setup_script(setup))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DET_", "RESOLUTE_"))}
    base.update(
        RESOLUTE_SETUP_ROOT=str(root),
        RESOLUTE_METADATA_URL=metadata_url,
        RESOLUTE_METADATA_TRIES="2",
        RESOLUTE_AGENT_INSTALL=f'mkdir -p "$RESOLUTE_SETUP_ROOT/bin" && '
        f'cp {recorder} "$RESOLUTE_SETUP_ROOT/bin/det-agent"',
        RESOLUTE_CONTAINER_RUNTIME="process",
        RESOLUTE_AGENT_FOREGROUND="1",
    )
    base.update(env)
    return subprocess.run(
        ["bash", str(script)], cwd=root, env=base, capture_output=True, text=True, timeout=60
    )


def recorded(root: Path) -> dict[str, Any]:
    return json.loads((root / "agent.json").read_text())


def _startup(text: str) -> AgentSetup:
    return AgentSetup(**{**vars(golden_setup()), "startup_script": text})


class TestSandboxRun:
    def test_aws_agent_gets_its_instance_id_and_the_pool_settings(
        self, metadata: FakeMetadata, tmp_path: Path
    ):
        root = tmp_path / "vm"
        setup = _startup(f"#!/bin/bash\necho startup >> {root}/order.log\n")
        done = run_script(setup, root, metadata.url, RESOLUTE_AGENT_EXTRA_ARGS="--log-level debug")
        assert done.returncode == 0, done.stderr
        got = recorded(root)
        assert got["argv"] == ["--log-level", "debug"]
        assert got["env"] == {
            "DET_AGENT_ID": "i-0123abcd",
            "DET_MASTER_HOST": "master.example.com",
            "DET_MASTER_PORT": "8443",
            "DET_RESOURCE_POOL": "test-pool",
            "DET_SLOT_TYPE": "cuda",
            "DET_AGENT_RECONNECT_ATTEMPTS": "5",
            "DET_AGENT_RECONNECT_BACKOFF": "5",
            "DET_CONFIG_FILE": f"{root}/agent.yaml",
            "DET_WORK_DIR": f"{root}/work",
            "DET_SECURITY_TLS_ENABLED": "true",
            "DET_SECURITY_TLS_MASTER_CERT": f"{root}/master.crt",
            "DET_SECURITY_TLS_MASTER_CERT_NAME": "master.example.com",
            "DET_INTERRUPTION_WATCH": "aws",
            "DET_METADATA_URL": metadata.url,
            "DET_CONTAINER_RUNTIME": "process",
        }
        assert (root / "order.log").read_text() == "startup\nagent\n"
        assert (root / "master.crt").read_text() == CERT
        assert (root / "agent.yaml").read_text() == "log:\n  level: debug\n"
        assert (root / "container_startup_script").read_text() == "echo hello from a task\n"
        # The IMDSv2 way: a token first, then the instance id with it.
        assert metadata.requests[:2] == [
            ("PUT", "/latest/api/token"),
            ("GET", "/latest/meta-data/instance-id"),
        ]

    def test_gcp_agent_gets_its_instance_name(self, metadata: FakeMetadata, tmp_path: Path):
        setup = AgentSetup(
            cloud="gcp",
            master_url="http://10.0.0.2:8080",
            resource_pool="spot",
            slot_type="cpu",
            agent_config_file_contents={"log": {"level": "info"}},
        )
        root = tmp_path / "vm"
        done = run_script(setup, root, metadata.url)
        assert done.returncode == 0, done.stderr
        env = recorded(root)["env"]
        assert env["DET_AGENT_ID"] == "pool-vm-1"
        assert env["DET_INTERRUPTION_WATCH"] == "gcp"
        assert env["DET_SLOT_TYPE"] == "cpu"
        assert (env["DET_MASTER_HOST"], env["DET_MASTER_PORT"]) == ("10.0.0.2", "8080")
        assert not any(k.startswith("DET_SECURITY_TLS") for k in env)
        assert json.loads((root / "agent.yaml").read_text()) == {"log": {"level": "info"}}
        assert not (root / "master.crt").exists()

    def test_a_failing_startup_script_stops_everything(
        self, metadata: FakeMetadata, tmp_path: Path
    ):
        root = tmp_path / "vm"
        done = run_script(_startup("echo broken >&2; exit 7\n"), root, metadata.url)
        assert done.returncode == 7
        assert "startup_script failed (exit 7)" in done.stderr
        assert not (root / "agent.json").exists()
        assert metadata.requests == []

    def test_hostile_values_stay_data(self, metadata: FakeMetadata, tmp_path: Path):
        setup = AgentSetup(
            cloud="aws",
            master_url="https://m.example:8443",
            resource_pool=HOSTILE,
            slot_type="none",
            master_cert=HOSTILE,
            master_cert_name=HOSTILE,
            agent_config_file_contents=HOSTILE,
            container_startup_script=HOSTILE,
        )
        root = tmp_path / "vm"
        done = run_script(setup, root, metadata.url)
        assert done.returncode == 0, done.stderr
        env = recorded(root)["env"]
        assert env["DET_RESOURCE_POOL"] == env["DET_SECURITY_TLS_MASTER_CERT_NAME"] == HOSTILE
        assert (root / "agent.yaml").read_text() == HOSTILE
        assert (root / "master.crt").read_text() == HOSTILE
        assert not list(tmp_path.rglob("PWNED*"))

    def test_without_curl_python_reads_the_metadata(self, metadata: FakeMetadata, tmp_path: Path):
        tools = tmp_path / "tools"
        tools.mkdir()
        for tool in ("bash", "base64", "mkdir", "chmod", "cp", "sleep"):
            found = shutil.which(tool)
            assert found, tool
            (tools / tool).symlink_to(found)
        (tools / "python3").symlink_to(sys.executable)
        root = tmp_path / "vm"
        done = run_script(golden_setup(), root, metadata.url, PATH=str(tools))
        assert done.returncode == 0, done.stderr
        assert recorded(root)["env"]["DET_AGENT_ID"] == "i-0123abcd"

    def test_no_metadata_server_is_an_error(self, metadata: FakeMetadata, tmp_path: Path):
        url = metadata.url
        metadata.stop()
        done = run_script(golden_setup(), tmp_path / "vm", url)
        assert done.returncode == 1
        assert "could not read this machine's id" in done.stderr
        assert not (tmp_path / "vm" / "agent.json").exists()

    def test_in_the_background_the_agent_outlives_the_script(
        self, metadata: FakeMetadata, tmp_path: Path
    ):
        root = tmp_path / "vm"
        done = run_script(golden_setup(), root, metadata.url, RESOLUTE_AGENT_FOREGROUND="0")
        assert done.returncode == 0, done.stderr
        assert "runs in the background" in done.stderr
        for _ in range(200):
            if (root / "agent.json").exists():
                break
            subprocess.run(["sleep", "0.05"], check=True)
        assert recorded(root)["env"]["DET_AGENT_ID"] == "i-0123abcd"

    def test_no_agent_and_no_docker_is_an_error(self, metadata: FakeMetadata, tmp_path: Path):
        no_image = AgentSetup(**{**vars(golden_setup()), "agent_docker_image": ""})
        done = run_script(
            no_image,
            tmp_path / "vm",
            metadata.url,
            RESOLUTE_AGENT_INSTALL="",
            RESOLUTE_AGENT_BIN="no-such-det-agent",
        )
        assert done.returncode == 1
        assert "no no-such-det-agent after the install" in done.stderr
