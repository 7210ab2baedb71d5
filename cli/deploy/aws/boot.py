"""Run on the master instance by its user-data and its systemd unit (never on a workstation).

`config` writes the master YAML from the facts the user-data recorded; `secrets` reads the
cluster's SecureString parameters from SSM and writes the master's DET_* environment (0600, on
the unit's tmpfs runtime directory), so no password is ever in user-data or on disk at rest.
With TLS it also writes the master's certificate and key there (0600), where the config's
`security.tls` points.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cli.deploy.aws.master_config import ClusterFacts, render_master_config
from cli.deploy.aws.options import (
    admin_password_parameter,
    db_password_parameter,
    tls_cert_parameter,
    tls_key_parameter,
)
from cli.deploy.aws.template.database import DB_NAME, DB_USER
from cli.render import to_yaml


def read_facts(path: Path) -> tuple[ClusterFacts, dict[str, Any]]:
    """The facts file: the ClusterFacts fields, plus db_host and db_port."""
    data = json.loads(path.read_text())
    names = {f.name for f in fields(ClusterFacts)}
    facts = ClusterFacts(**{k: v for k, v in data.items() if k in names})
    return facts, {k: v for k, v in data.items() if k not in names}


def database_url(host: str, port: str | int, password: str) -> str:
    # RDS PostgreSQL 15+ refuses plain connections (rds.force_ssl); require TLS rather than
    # let asyncpg fall back. Not verify-full: the RDS CA bundle is not on the AMI.
    user = f"{DB_USER}:{quote(password, safe='')}"
    return f"postgresql+asyncpg://{user}@{host}:{port}/{DB_NAME}?ssl=require"


def environment(facts: ClusterFacts, extra: dict[str, Any], ssm: Any) -> dict[str, str]:
    def secret(name: str) -> str:
        return str(ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"])

    db_password = secret(db_password_parameter(facts.cluster_id))
    return {
        "DET_DB_URL": database_url(extra["db_host"], extra["db_port"], db_password),
        "DET_SECURITY_INITIAL_USER_PASSWORD": secret(admin_password_parameter(facts.cluster_id)),
        "AWS_DEFAULT_REGION": facts.region,
    }


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cli.deploy.aws.boot")
    parser.add_argument("what", choices=["config", "secrets"])
    parser.add_argument("--facts", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    facts, extra = read_facts(args.facts)
    if args.what == "config":
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(to_yaml(render_master_config(facts)))
        return 0
    import boto3  # only here: the workstation's `det` never needs it for `config`

    ssm = boto3.client("ssm", region_name=facts.region)
    env = environment(facts, extra, ssm)
    # systemd EnvironmentFile syntax: values quoted, backslash and quote escaped.
    lines = []
    for key, value in env.items():
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'{key}="{escaped}"')
    _write_private(args.out, "\n".join(lines) + "\n")
    if facts.master_tls:
        for name, parameter in (
            ("master.crt", tls_cert_parameter(facts.cluster_id)),
            ("master.key", tls_key_parameter(facts.cluster_id)),
        ):
            value = ssm.get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
            _write_private(args.out.parent / name, str(value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
