"""`security.tls`: the master serves HTTPS with the configured certificate and key."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cli.client import ApiClient
from cli.errors import CliError, MasterUnreachable
from cli.tls import master_trust
from controlplane.__main__ import tls_options
from controlplane.config import load_settings
from controlplane.services.provisioning.loop import master_url_fallback
from provisioners.agent_setup import render_setup_script
from provisioners.config import parse_provider
from provisioners.factory import agent_setup_for
from tests.provisioners.test_agent_setup import assignments
from tests.provisioners.test_config import AWS_REQUIRED
from tests.support.live_master import free_port

CERT_NAME = "master.example"


def self_signed(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName(CERT_NAME)]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "master.crt", folder / "master.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return cert_path, key_path


def test_no_tls_section_means_plain_http(tmp_path: Path) -> None:
    assert tls_options(load_settings(None, data_dir=tmp_path)) == {}


def test_cert_and_key_reach_uvicorn(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    config = tmp_path / "master.yaml"
    config.write_text(f"security:\n  tls:\n    cert: {cert}\n    key: {key}\n")
    settings = load_settings(config, data_dir=tmp_path)
    assert tls_options(settings) == {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}


@pytest.mark.parametrize(
    ("tls", "message"),
    [
        ("cert: {cert}", "must be set together"),
        ("key: {key}", "must be set together"),
        ("cert: {folder}/missing.crt\n    key: {key}", "no such file"),
    ],
)
def test_half_or_missing_tls_is_refused(tmp_path: Path, tls: str, message: str) -> None:
    cert, key = self_signed(tmp_path)
    config = tmp_path / "master.yaml"
    body = tls.format(cert=cert, key=key, folder=tmp_path)
    config.write_text(f"security:\n  tls:\n    {body}\n")
    with pytest.raises(ValueError, match=message):
        load_settings(config, data_dir=tmp_path)


@pytest.mark.slow
def test_master_with_a_self_signed_cert_answers_https(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    config = tmp_path / "master.yaml"
    config.write_text(
        f"security:\n  initial_user_password: 'Tls-test-1'\n"
        f"  tls:\n    cert: {cert}\n    key: {key}\n"
    )
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    log = (tmp_path / "master.log").open("wb")
    trust = ssl.create_default_context(cafile=str(cert))
    options = ["--host", "127.0.0.1", "--port", str(port), "--data-dir", str(tmp_path / "data")]
    master = subprocess.Popen(
        [sys.executable, "-m", "controlplane", "--config-file", str(config), *options],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"https://127.0.0.1:{port}/info"
        deadline = time.monotonic() + 60
        while True:
            assert master.poll() is None, (tmp_path / "master.log").read_text()
            try:
                answer = httpx.get(url, verify=trust, timeout=2)
                break
            except httpx.ConnectError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)  # polling the port until the master listens
        assert answer.status_code == 200, answer.text
        assert answer.json()["cluster_name"] == "default"
        # The certificate is what makes the client trust it: without it the handshake fails.
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            httpx.get(url, timeout=2)
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.get(f"http://127.0.0.1:{port}/info", timeout=2)
        # `det` trusts it as Determined's client does: DET_MASTER_CERT_FILE, `noverify`, and
        # DET_MASTER_CERT_NAME for a certificate whose name is not the address dialled.
        base = f"https://127.0.0.1:{port}"
        for env in (
            {"DET_MASTER_CERT_FILE": str(cert)},
            {"DET_MASTER_CERT_FILE": "noverify"},
            {"DET_MASTER_CERT_FILE": str(cert), "DET_MASTER_CERT_NAME": CERT_NAME},
        ):
            with ApiClient(base, trust=master_trust(env), retries=0) as client:
                assert client.request("GET", "/info").json()["cluster_name"] == "default"
        for env in ({}, {"DET_MASTER_CERT_FILE": str(cert), "DET_MASTER_CERT_NAME": "other"}):
            refused = pytest.raises(MasterUnreachable, match="CERTIFICATE_VERIFY_FAILED")
            with ApiClient(base, trust=master_trust(env), retries=0) as client, refused:
                client.request("GET", "/info")
    finally:
        master.terminate()
        master.wait(timeout=30)
        log.close()


def test_agents_of_an_https_master_get_its_cert_and_never_its_key(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    config = tmp_path / "master.yaml"
    config.write_text(f"security:\n  tls:\n    cert: {cert}\n    key: {key}\n")
    settings = load_settings(config, data_dir=tmp_path)
    provider = parse_provider({**AWS_REQUIRED, "master_cert_name": "master.example"})
    url = master_url_fallback("127.0.0.1", 8443, tls=settings.security.tls.enabled)
    assert url == "https://127.0.0.1:8443"
    script = render_setup_script(
        agent_setup_for(provider, pool="p", master_url=url, master_cert=cert.read_text())
    )
    values = assignments(script)
    assert values["MASTER_TLS"] == "true"
    assert base64.b64decode(values["MASTER_CERT_B64"]).decode() == cert.read_text()
    assert values["MASTER_CERT_NAME"] == "master.example"
    key_body = "".join(key.read_text().splitlines()[1:-1])
    assert key_body[:40] not in script and "PRIVATE KEY" not in script


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, (None, False, None)),
        ({"DET_MASTER_CERT_FILE": "NoVerify"}, (None, True, None)),
        ({"DET_MASTER_CERT_FILE": "noverify", "DET_MASTER_CERT_NAME": "m"}, (None, True, "m")),
        ({"DET_MASTER_CERT_NAME": ""}, (None, False, None)),
    ],
)
def test_det_reads_the_cert_settings_determined_users_set(
    env: dict[str, str], expected: tuple[object, bool, str | None]
) -> None:
    trust = master_trust(env)
    assert (trust.cert_file, trust.noverify, trust.server_name) == expected


def test_a_missing_cert_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CliError, match="no such file"):
        master_trust({"DET_MASTER_CERT_FILE": str(tmp_path / "nope.crt")})
    cert, _ = self_signed(tmp_path)
    assert master_trust({"DET_MASTER_CERT_FILE": str(cert)}).cert_file == cert
