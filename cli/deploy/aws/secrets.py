"""The cluster's secrets: SecureString parameters in SSM. The passwords are made once by `up`;
the master's TLS certificate and key are written by each `up` that is given them (a new pair
replaces the old at the master's next start)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cli.deploy.aws.options import (
    CLUSTER_TAG,
    MANAGED_BY_TAG,
    MANAGED_BY_VALUE,
    admin_password_parameter,
    db_password_parameter,
    tls_cert_parameter,
    tls_key_parameter,
)

STANDARD_TIER_BYTES = 4096
ADVANCED_TIER_BYTES = 8192
"""SSM's limits on a parameter's value; a certificate chain may need the advanced tier."""


@dataclass(frozen=True)
class MasterTls:
    """`--master-tls-cert` and `--master-tls-key`, read and checked on the workstation."""

    cert: str
    key: str


def read_master_tls(cert_path: str | None, key_path: str | None) -> MasterTls | None:
    """Both files or neither; PEM text within SSM's size limit. Raises ValueError."""
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
                data = handle.read(ADVANCED_TIER_BYTES + 1)
        except OSError as exc:
            raise ValueError(f"{flag} {path}: {exc.strerror or exc}") from None
        if len(data) > ADVANCED_TIER_BYTES:
            raise ValueError(f"{flag} {path}: larger than SSM's {ADVANCED_TIER_BYTES} bytes")
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError:
            raise ValueError(f"{flag} {path}: not a PEM file") from None
        if marker not in text:
            raise ValueError(f"{flag} {path}: not a PEM file (no {marker.strip('-')})")
        texts.append(text)
    return MasterTls(cert=texts[0], key=texts[1])


def _tags(cluster_id: str) -> list[dict[str, str]]:
    return [
        {"Key": CLUSTER_TAG, "Value": cluster_id},
        {"Key": MANAGED_BY_TAG, "Value": MANAGED_BY_VALUE},
    ]


def put_tls(ssm: Any, cluster_id: str, tls: MasterTls) -> list[str]:
    """Store (or replace) the certificate and key; returns the parameter names."""
    names = []
    for name, value in (
        (tls_cert_parameter(cluster_id), tls.cert),
        (tls_key_parameter(cluster_id), tls.key),
    ):
        tier = "Standard" if len(value.encode()) <= STANDARD_TIER_BYTES else "Advanced"
        ssm.put_parameter(
            Name=name,
            Value=value,
            Type="SecureString",
            Description=f"Resolute cluster {cluster_id}",
            Tier=tier,
            Overwrite=True,
        )
        # put_parameter refuses Tags together with Overwrite; tag it separately.
        ssm.add_tags_to_resource(ResourceType="Parameter", ResourceId=name, Tags=_tags(cluster_id))
        names.append(name)
    return names


def _exists(ssm: Any, name: str) -> bool:
    try:
        ssm.get_parameter(Name=name)
    except ssm.exceptions.ParameterNotFound:
        return False
    return True


def ensure_secrets(
    ssm: Any,
    cluster_id: str,
    *,
    new_password: Callable[[], str],
    db_password: str | None = None,
    admin_password: str | None = None,
) -> list[str]:
    """Create whichever of the two parameters is missing (a given password, else a new random
    one); an existing one is kept, as the database already uses it. Returns the names made."""
    made = []
    tags = [
        {"Key": CLUSTER_TAG, "Value": cluster_id},
        {"Key": MANAGED_BY_TAG, "Value": MANAGED_BY_VALUE},
    ]
    for name, given in (
        (db_password_parameter(cluster_id), db_password),
        (admin_password_parameter(cluster_id), admin_password),
    ):
        if _exists(ssm, name):
            continue
        ssm.put_parameter(
            Name=name,
            Value=given or new_password(),
            Type="SecureString",
            Description=f"Resolute cluster {cluster_id}",
            Tags=tags,
        )
        made.append(name)
    return made


def delete_secrets(ssm: Any, cluster_id: str) -> None:
    names = [
        db_password_parameter(cluster_id),
        admin_password_parameter(cluster_id),
        tls_cert_parameter(cluster_id),
        tls_key_parameter(cluster_id),
    ]
    ssm.delete_parameters(Names=names)
