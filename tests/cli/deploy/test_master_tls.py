"""`--master-tls-cert` / `--master-tls-key`: read and checked on the workstation, first."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.deploy.master_tls import MasterTls, read_master_tls
from tests.controlplane.test_tls import self_signed

LIMIT = 8192


def test_neither_flag_means_no_tls() -> None:
    assert read_master_tls(None, None, max_bytes=LIMIT) is None


def test_a_pem_pair_is_read_as_written(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    expected = MasterTls(cert.read_text(), key.read_text())
    assert read_master_tls(str(cert), str(key), max_bytes=LIMIT) == expected


@pytest.mark.parametrize(
    ("cert", "key", "message"),
    [
        ("{cert}", None, "go together"),
        (None, "{key}", "go together"),
        ("{folder}/missing.crt", "{key}", "--master-tls-cert .*missing.crt: No such file"),
        ("{folder}", "{key}", "--master-tls-cert .*: Is a directory"),
        ("{key}", "{key}", "--master-tls-cert .*: not a PEM file .*BEGIN CERTIFICATE"),
        ("{cert}", "{cert}", "--master-tls-key .*: not a PEM file .*PRIVATE KEY"),
        ("{cert}", "{binary}", "--master-tls-key .*: not a PEM file"),
        ("{big}", "{key}", "--master-tls-cert .*larger than the 8192 bytes a secret can hold"),
    ],
)
def test_bad_tls_files_are_refused_clearly(
    tmp_path: Path, cert: str | None, key: str | None, message: str
) -> None:
    cert_path, key_path = self_signed(tmp_path)
    binary = tmp_path / "binary.key"
    binary.write_bytes(b"\xff\x00PRIVATE KEY-----")
    big = tmp_path / "big.crt"
    big.write_text(cert_path.read_text() * 20)
    names = {
        "cert": cert_path, "key": key_path, "folder": tmp_path, "binary": binary, "big": big,
    }  # fmt: skip

    def fill(text: str | None) -> str | None:
        return None if text is None else text.format(**names)

    with pytest.raises(ValueError, match=message):
        read_master_tls(fill(cert), fill(key), max_bytes=LIMIT)
