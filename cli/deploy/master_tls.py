"""`--master-tls-cert` / `--master-tls-key` of `det deploy aws|gcp`: read and checked on the
workstation, before any cloud call; each cloud stores them as secrets of its own."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MasterTls:
    """`--master-tls-cert` and `--master-tls-key`, read and checked on the workstation."""

    cert: str
    key: str


def read_master_tls(
    cert_path: str | None, key_path: str | None, *, max_bytes: int
) -> MasterTls | None:
    """Both files or neither, PEM text of at most `max_bytes` (the cloud's limit on a secret).
    Raises ValueError naming the flag."""
    if cert_path is None and key_path is None:
        return None
    if cert_path is None or key_path is None:
        raise ValueError("--master-tls-cert and --master-tls-key go together")
    texts = []
    for flag, path, marker in (
        ("--master-tls-cert", cert_path, "-----BEGIN CERTIFICATE-----"),
        ("--master-tls-key", key_path, "PRIVATE KEY-----"),
    ):
        try:
            with open(path, "rb") as handle:
                data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise ValueError(f"{flag} {path}: {exc.strerror or exc}") from None
        if len(data) > max_bytes:
            raise ValueError(f"{flag} {path}: larger than the {max_bytes} bytes a secret can hold")
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError:
            raise ValueError(f"{flag} {path}: not a PEM file") from None
        if marker not in text:
            raise ValueError(f"{flag} {path}: not a PEM file (no {marker.strip('-')})")
        texts.append(text)
    return MasterTls(cert=texts[0], key=texts[1])
