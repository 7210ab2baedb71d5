"""The cluster's secrets: SecureString parameters in SSM. The passwords are made once by `up`;
the master's TLS certificate and key are written by each `up` that is given them (a new pair
replaces the old at the master's next start)."""

from __future__ import annotations

from collections.abc import Callable
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
from cli.deploy.master_tls import MasterTls

STANDARD_TIER_BYTES = 4096
ADVANCED_TIER_BYTES = 8192
"""SSM's limits on a parameter's value; a certificate chain may need the advanced tier."""


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
