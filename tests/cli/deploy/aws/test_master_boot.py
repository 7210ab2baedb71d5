"""The master's user-data, as the stack made it in moto, executed for real in a sandbox.

Only the machine's own programs are fakes on PATH (apt-get, systemctl, and python3's `-m venv`,
whose pip records instead of downloading from PyPI); `aws s3 cp` is a small stand-in that
downloads with boto3 from the same moto. The script's own Python steps (render the master
config, read the secrets from SSM) run for real, and what they write is loaded by the master's
own config model.
"""

from __future__ import annotations

import email
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from controlplane.__main__ import tls_options
from controlplane.config import load_settings
from provisioners.config_aws import AwsProviderConfig
from tests.cli.deploy.aws.conftest import (
    CLUSTER,
    DeployWorld,
    master_user_data,
    outputs_of,
    secrets_of,
    stack_of,
)
from tests.controlplane.test_tls import self_signed

pytestmark = pytest.mark.slow

FAKE_AWS = """#!{python}
# `aws s3 cp [--only-show-errors] [--region R] s3://bucket/key dest`, and nothing else.
import os, sys, boto3
args = [a for a in sys.argv[1:] if a != "--only-show-errors"]
if "--region" in args:
    i = args.index("--region"); del args[i:i + 2]
assert args[:2] == ["s3", "cp"], args
bucket, _, key = args[2].removeprefix("s3://").partition("/")
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write("aws " + " ".join(sys.argv[1:]) + "\\n")
boto3.client("s3").download_file(bucket, key, args[3])
"""
RECORDER = '#!/bin/sh\necho "{name} $*" >>"$FAKE_LOG"\n'
FAKE_PYTHON3 = """#!/bin/bash
# python3 -m venv DIR: a "venv" whose python is the test's, seeing DIR/lib first, and whose pip
# installs the given wheel alone into DIR/lib (its dependencies are the test venv's: no PyPI).
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin" "$3/lib"
  printf '#!/bin/sh\\nPYTHONPATH=%s exec {python} "$@"\\n' "$3/lib" >"$3/bin/python"
  cat >"$3/bin/pip" <<PIP
#!/bin/bash
echo "pip \\$*" >>"\\$FAKE_LOG"
wheel="\\${@: -1}"
exec {python} -m pip install -q --no-deps --no-index --target "$3/lib" "\\${wheel%[*}"
PIP
  printf '#!/bin/sh\\necho "det-master $*" >>"$FAKE_LOG"\\n' >"$3/bin/det-master"
  chmod +x "$3/bin/python" "$3/bin/pip" "$3/bin/det-master"
  echo "python3 $*" >>"$FAKE_LOG"
  exit 0
fi
exec {python} "$@"
"""


def _fakes(folder: Path) -> Path:
    folder.mkdir()
    scripts = {
        "aws": FAKE_AWS.format(python=sys.executable),
        "python3": FAKE_PYTHON3.replace("{python}", sys.executable),
        "apt-get": RECORDER.format(name="apt-get"),
        "systemctl": RECORDER.format(name="systemctl"),
    }
    for name, text in scripts.items():
        path = folder / name
        path.write_text(text)
        path.chmod(0o755)
    return folder


def _parts(user_data: str) -> dict[str, str]:
    message = email.message_from_string(user_data)
    assert message.is_multipart()
    return {
        part.get_content_type(): part.get_payload()
        for part in message.get_payload()  # type: ignore[union-attr]
    }


def _boot(world: DeployWorld, tmp_path: Path) -> tuple[str, Path, dict[str, str], Path]:
    """Runs the master's user-data in the sandbox: (user-data, root, env, calls log)."""
    made = outputs_of(stack_of(world))
    user_data = master_user_data(world, made["MasterId"])
    parts = _parts(user_data)
    assert "- [scripts-user, always]" in parts["text/cloud-config"]
    script = tmp_path / "boot.sh"
    script.write_text(parts["text/x-shellscript"])
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    if shutil.which("shellcheck"):
        lint = subprocess.run(
            ["shellcheck", "-s", "bash", str(script)], capture_output=True, text=True, check=False
        )
        assert lint.returncode == 0, lint.stdout

    root, log = tmp_path / "root", tmp_path / "calls.log"
    env = {
        **os.environ,
        "PATH": f"{_fakes(tmp_path / 'bin')}:/usr/bin:/bin",
        "RESOLUTE_BOOT_ROOT": str(root),
        "FAKE_LOG": str(log),
    }
    env.pop("PYTHONPATH", None)  # the boot's Python steps must run the installed wheel's code
    boot = subprocess.run(
        ["bash", str(script)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert boot.returncode == 0, boot.stdout + boot.stderr
    return user_data, root, env, log


def _start_step(root: Path, env: dict[str, str], run: Path) -> Path:
    """The unit's ExecStartPre, writing into `run` instead of /run/resolute; its env file."""
    unit = (root / "etc/systemd/system/resolute-master.service").read_text()
    pre = next(line for line in unit.splitlines() if line.startswith("ExecStartPre="))
    env_file = run / "master.env"
    command = shlex.split(pre.removeprefix("ExecStartPre="))
    command[command.index("--out") + 1] = str(env_file)
    subprocess.run(command, env=env, cwd=run.parent, check=True, timeout=60)
    return env_file


def test_user_data_boots_a_master_whose_config_loads(
    world: DeployWorld, wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.det(*world.up_args("--wheel", str(wheel)))
    made = outputs_of(stack_of(world))
    user_data, root, env, log = _boot(world, tmp_path)
    calls = log.read_text().splitlines()

    # the exact wheel `up` uploaded, installed with the aws extra; the service started
    installed = root / "opt/resolute/wheels" / wheel.name
    assert installed.read_bytes() == wheel.read_bytes()
    assert f"pip install -q {installed}[aws]" in calls
    venv_python = root / "opt/resolute/venv/bin/python"
    where = subprocess.run(
        [str(venv_python), "-c", "import cli.deploy.aws.boot as b; print(b.__file__)"],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert where.stdout.startswith(str(root / "opt/resolute/venv/lib/cli/")), where.stdout
    assert calls[-3:] == [
        "systemctl daemon-reload",
        "systemctl enable resolute-master.service",
        "systemctl restart resolute-master.service",
    ]
    unit = (root / "etc/systemd/system/resolute-master.service").read_text()
    assert "Restart=always" in unit and "WantedBy=multi-user.target" in unit
    assert "EnvironmentFile=-/run/resolute/master.env" in unit

    # the service's start step reads the secrets from SSM into a private file
    env_file = _start_step(root, env, tmp_path / "run")
    assert not (tmp_path / "run/master.key").exists()  # no TLS asked for
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    variables = dict(
        (k, shlex.split(v)[0])
        for k, _, v in (ln.partition("=") for ln in env_file.read_text().splitlines())
    )
    db_password, admin_password = secrets_of(world)
    assert db_password not in user_data and admin_password not in user_data

    # and the master's own config model loads what the boot wrote, with those variables
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(root / "etc/resolute/master.yaml")
    assert settings.db.url is not None and f":{db_password}@" in settings.db.url
    assert settings.db.url.startswith("postgresql+asyncpg://resolute:")
    assert settings.db.url.endswith("/resolute?ssl=require")
    assert settings.security.initial_user_password is not None
    assert settings.security.initial_user_password.get_secret_value() == admin_password
    assert settings.checkpoint_storage == {
        "type": "s3",
        "bucket": made["CheckpointBucket"],
        "prefix": "checkpoints",
        "save_experiment_best": 0,
        "save_trial_best": 1,
        "save_trial_latest": 1,
    }
    providers = settings.providers
    assert sorted(providers) == ["aux-pool", "compute-pool"]
    for provider in providers.values():
        assert isinstance(provider, AwsProviderConfig)
        assert provider.max_instances == 5
        assert provider.tag_key == "resolute-cluster" and provider.tag_value == CLUSTER
        assert provider.image_id == world.moto.image_id
        assert provider.network_interface.security_group_id == made["AgentSecurityGroupId"]
        assert provider.iam_instance_profile_arn == made["AgentInstanceProfileArn"]
        assert wheel.name in provider.agent_install
    assert providers["compute-pool"].instance_type == "g4dn.xlarge"


def test_a_tls_master_gets_its_cert_and_key_from_ssm_only(
    world: DeployWorld, wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed(tmp_path)
    tls = ["--master-tls-cert", str(cert), "--master-tls-key", str(key)]
    world.det(*world.up_args("--wheel", str(wheel), *tls, "--master-cert-name", "master.example"))
    made = outputs_of(stack_of(world))
    assert made["MasterUrl"].startswith("https://")
    user_data, root, env, _ = _boot(world, tmp_path)
    key_body = "".join(key.read_text().splitlines()[1:-1])
    cert_body = "".join(cert.read_text().splitlines()[1:-1])
    parameters = json.dumps(stack_of(world)["Parameters"])
    for public in (user_data, parameters):
        assert key_body[:40] not in public and cert_body[:40] not in public
        assert "PRIVATE KEY" not in public

    run = tmp_path / "run"
    env_file = _start_step(root, env, run)
    for name, source in (("master.crt", cert), ("master.key", key)):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o600
        assert (run / name).read_text() == source.read_text()

    for k, _, v in (ln.partition("=") for ln in env_file.read_text().splitlines()):
        monkeypatch.setenv(k, shlex.split(v)[0])
    # The config names the unit's runtime directory; the sandbox's stands in for it.
    config = (root / "etc/resolute/master.yaml").read_text().replace("/run/resolute", str(run))
    (tmp_path / "master.yaml").write_text(config)
    settings = load_settings(tmp_path / "master.yaml")
    assert settings.security.tls.cert == run / "master.crt"
    assert settings.security.tls.key == run / "master.key"
    assert tls_options(settings) == {
        "ssl_certfile": str(run / "master.crt"),
        "ssl_keyfile": str(run / "master.key"),
    }
    for provider in settings.providers.values():
        assert provider.master_url == "https://local-ipv4:8080"
        assert provider.master_cert_name == "master.example"
