"""The cluster's passwords: SecureString parameters in SSM, made once by `up`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cli.deploy.aws.options import (
    CLUSTER_TAG,
    MANAGED_BY_TAG,
    MANAGED_BY_VALUE,
    admin_password_parameter,
    db_password_parameter,
)


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
    names = [db_password_parameter(cluster_id), admin_password_parameter(cluster_id)]
    ssm.delete_parameters(Names=names)
