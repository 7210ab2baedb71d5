"""The master VM's start-up script, rendered from the one template, run for real in a sandbox.

System commands (apt-get, useradd, id, chown, systemctl) and curl (the metadata server, Secret
Manager, Cloud Storage) are fakes on PATH that record their calls; the venv's pip is a fake
that "installs" the wheel. Everything else (bash, python3, sed, the heredocs) is real, and
RESOLUTE_ROOT moves every path the script writes into the sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from cli.deploy.gcp_config import GcpDeployment
from cli.deploy.gcp_template import render_startup_script
from controlplane.__main__ import tls_options
from controlplane.config import load_settings
from tests.controlplane.test_tls import self_signed

PASSWORD = "p@ss:w/rd%&'\" é"
WHEEL = "resolute-0.1.0-py3-none-any.whl"
TOKEN = "ya29.sandbox-token"

FAKE_CURL = r"""#!/usr/bin/env python3
import base64, json, os, sys
args, out, headers, url = sys.argv[1:], None, [], None
i = 0
while i < len(args):
    if args[i] == "-o":
        out = args[i + 1]; i += 2; continue
    if args[i] == "-H":
        headers.append(args[i + 1]); i += 2; continue
    if not args[i].startswith("-"):
        url = args[i]
    i += 1
with open(os.environ["SANDBOX_LOG"], "a") as log:
    log.write(json.dumps({"cmd": "curl", "url": url, "headers": headers}) + "\n")
if url.startswith("http://metadata.google.internal/"):
    assert "Metadata-Flavor: Google" in headers
    body = json.dumps({"access_token": os.environ["SANDBOX_TOKEN"], "expires_in": 3599})
elif url.startswith("https://secretmanager.googleapis.com/v1/"):
    name = url.split("/secrets/", 1)[1].split("/", 1)[0]
    files = json.loads(os.environ.get("SANDBOX_SECRET_FILES", "{}"))
    value = open(files[name]).read() if name in files else os.environ["SANDBOX_PASSWORD"]
    data = base64.b64encode(value.encode()).decode()
    body = json.dumps({"name": url, "payload": {"data": data}})
elif url.startswith("https://storage.googleapis.com/"):
    body = "wheel bytes"
else:
    sys.exit(22)
if out:
    open(out, "w").write(body)
else:
    sys.stdout.write(body)
"""

# Appends {"cmd": <its own name>, "args": [...]} to $SANDBOX_LOG.
RECORD = (
    "python3 -c 'import json, os, sys; "
    'open(os.environ["SANDBOX_LOG"], "a").write('
    'json.dumps({"cmd": sys.argv[1], "args": sys.argv[2:]}) + "\\n")\''
)
RECORDER = f"""#!/usr/bin/env bash
{RECORD} "$(basename "$0")" "$@"
"""

FAKE_ID = RECORDER + """[ -e "$SANDBOX_ROOT/user-created" ]\n"""
FAKE_USERADD = RECORDER + """touch "$SANDBOX_ROOT/user-created"\n"""

FAKE_PIP = r"""#!/usr/bin/env bash
state="$(dirname "$0")/../installed-version"
case "$1" in
  show) [ -f "$state" ] && echo "Name: resolute" && echo "Version: $(cat "$state")" ;;
  install)
    @RECORD@ pip "$@"
    wheel="${!#}"; wheel="${wheel%\[gcp\]}"
    basename "$wheel" | cut -d- -f2 >"$state" ;;
esac
"""
FAKE_PIP = FAKE_PIP.replace("@RECORD@", RECORD)


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def _deployment(**tls: object) -> GcpDeployment:
    return GcpDeployment(  # type: ignore[arg-type]
        **tls,
        cluster_id="c1",
        project_id="my-project-1",
        zone="us-west1-a",
        scheduler_type="priority",
        preemption_enabled=True,
        max_dynamic_agents=3,
        resolute_wheel=WHEEL,
        resolute_version="0.1.0",
    )


def _script(**tls: object) -> str:
    d = _deployment(**tls)
    return render_startup_script(
        d.startup_variables(), d.master_config_variables("10.20.0.3", "10.10.0.2")
    )


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, Path]:
    root, bin_dir = tmp_path / "root", tmp_path / "bin"
    root.mkdir()
    bin_dir.mkdir()
    _executable(bin_dir / "curl", FAKE_CURL)
    for command in ("apt-get", "systemctl", "chown"):
        _executable(bin_dir / command, RECORDER)
    _executable(bin_dir / "id", FAKE_ID)
    _executable(bin_dir / "useradd", FAKE_USERADD)
    venv_bin = root / "opt/resolute/venv/bin"
    venv_bin.mkdir(parents=True)
    _executable(venv_bin / "pip", FAKE_PIP)
    script = tmp_path / "startup.sh"
    script.write_text(_script())
    return {"root": root, "bin": bin_dir, "script": script, "log": tmp_path / "calls.jsonl"}


def _run(sandbox: dict[str, Path], secret_files: dict[str, str] | None = None) -> list[dict]:
    sandbox["log"].write_text("")
    env = {
        "SANDBOX_SECRET_FILES": json.dumps(secret_files or {}),
        "PATH": f"{sandbox['bin']}:/usr/bin:/bin",
        "RESOLUTE_ROOT": str(sandbox["root"]),
        "SANDBOX_ROOT": str(sandbox["root"]),
        "SANDBOX_LOG": str(sandbox["log"]),
        "SANDBOX_TOKEN": TOKEN,
        "SANDBOX_PASSWORD": PASSWORD,
        "HOME": str(sandbox["root"]),
    }
    done = subprocess.run(
        ["bash", str(sandbox["script"])], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in sandbox["log"].read_text().splitlines()]


def test_the_rendered_script_passes_bash_n() -> None:
    done = subprocess.run(["bash", "-n"], input=_script(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_the_rendered_script_passes_shellcheck() -> None:
    done = subprocess.run(
        ["shellcheck", "--shell=bash", "-"], input=_script(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout


def test_no_secret_is_in_the_script_or_the_metadata() -> None:
    script = _script()
    assert "__DB_PASSWORD__" in script  # only the placeholder travels in the metadata
    assert PASSWORD not in script


def test_in_a_sandbox_it_writes_a_master_config_our_model_loads(
    sandbox: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _run(sandbox)
    config = sandbox["root"] / "etc/resolute/master.yaml"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    for name in [n for n in os.environ if n.startswith("DET_")]:
        monkeypatch.delenv(name)
    settings = load_settings(config)
    url = make_url(settings.db.url)
    assert (url.username, url.password, url.host, url.database) == (
        "resolute",
        PASSWORD,
        "10.20.0.3",
        "resolute",
    )
    assert url.query == {"ssl": "require"}
    assert settings.checkpoint_storage == {
        "type": "gcs",
        "bucket": "c1-my-project-1-ckpt",
        "save_experiment_best": 0,
        "save_trial_best": 1,
        "save_trial_latest": 1,
    }
    scheduler = settings.resources.resource_manager.scheduler
    assert (scheduler.type.value, scheduler.preemption) == ("priority", True)
    providers = settings.providers
    assert set(providers) == {"aux-pool", "compute-pool"}
    compute = providers["compute-pool"]
    assert (compute.project, compute.zone) == ("my-project-1", "us-west1-a")
    assert compute.max_instances == 3
    assert (compute.label_key, compute.label_value) == ("resolute-agents", "c1")
    assert compute.instance_type.gpu_num == 4 and compute.cpu_slots_allowed
    assert providers["aux-pool"].instance_type.gpu_num == 0
    assert compute.master_url == "http://10.10.0.2:8080"
    assert "wheels%2F" + WHEEL in compute.agent_install

    urls = [c["url"] for c in calls if c["cmd"] == "curl"]
    assert any(u.endswith("/secrets/c1-db-password/versions/latest:access") for u in urls)
    wheel_url = "https://storage.googleapis.com/storage/v1/b/c1-my-project-1-tfstate/o/wheels%2F"
    assert any(u.startswith(wheel_url + WHEEL) for u in urls)
    bearer = [h for c in calls if c["cmd"] == "curl" for h in c["headers"] if "Bearer" in h]
    assert bearer and all(h == f"Authorization: Bearer {TOKEN}" for h in bearer)
    pip = [c for c in calls if c["cmd"] == "pip"]
    assert len(pip) == 1 and pip[0]["args"][-1].endswith(f"{WHEEL}[gcp]")
    systemctl = [c["args"] for c in calls if c["cmd"] == "systemctl"]
    assert systemctl == [
        ["daemon-reload"],
        ["enable", "resolute-master.service"],
        ["restart", "resolute-master.service"],
    ]
    unit = (sandbox["root"] / "etc/systemd/system/resolute-master.service").read_text()
    assert "User=resolute" in unit and "Restart=always" in unit
    assert f"--config-file {sandbox['root']}/etc/resolute/master.yaml" in unit
    assert [c["cmd"] for c in calls].count("useradd") == 1


def test_a_second_boot_keeps_the_installed_version_and_rewrites_the_config(
    sandbox: dict[str, Path],
) -> None:
    _run(sandbox)
    calls = _run(sandbox)
    urls = [c["url"] for c in calls if c["cmd"] == "curl"]
    assert not any("storage.googleapis.com" in u for u in urls), "the wheel was fetched again"
    assert not [c for c in calls if c["cmd"] in ("pip", "useradd")]
    assert any("secretmanager" in u for u in urls)
    assert ["restart", "resolute-master.service"] in [
        c["args"] for c in calls if c["cmd"] == "systemctl"
    ]


def test_a_tls_master_reads_its_cert_and_key_from_secret_manager_only(
    sandbox: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed(tmp_path)
    script = _script(master_tls=True, master_cert_name="master.example")
    key_body = "".join(key.read_text().splitlines()[1:-1])
    assert "PRIVATE KEY" not in script and key_body[:40] not in script
    sandbox["script"].write_text(script)
    calls = _run(sandbox, {"c1-master-tls-cert": str(cert), "c1-master-tls-key": str(key)})

    tls = sandbox["root"] / "etc/resolute/tls"
    for name, source in (("master.crt", cert), ("master.key", key)):
        assert stat.S_IMODE((tls / name).stat().st_mode) == 0o600
        assert (tls / name).read_text() == source.read_text()
    chowned = [c["args"] for c in calls if c["cmd"] == "chown"]
    assert ["resolute:", str(tls), str(tls / "master.crt"), str(tls / "master.key")] in chowned
    urls = [c["url"] for c in calls if c["cmd"] == "curl"]
    for secret in ("c1-master-tls-cert", "c1-master-tls-key"):
        assert any(u.endswith(f"/secrets/{secret}/versions/latest:access") for u in urls)

    for name in [n for n in os.environ if n.startswith("DET_")]:
        monkeypatch.delenv(name)
    settings = load_settings(sandbox["root"] / "etc/resolute/master.yaml")
    assert tls_options(settings) == {
        "ssl_certfile": str(tls / "master.crt"),
        "ssl_keyfile": str(tls / "master.key"),
    }
    for provider in settings.providers.values():
        assert provider.master_url == "https://10.10.0.2:8080"
        assert provider.master_cert_name == "master.example"


def test_without_tls_no_tls_secret_is_read(sandbox: dict[str, Path]) -> None:
    calls = _run(sandbox)
    assert not any("master-tls" in c.get("url", "") for c in calls)
    assert not (sandbox["root"] / "etc/resolute/tls").exists()
