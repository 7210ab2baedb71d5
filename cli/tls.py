"""How `det` trusts an HTTPS master, read the way Determined's client reads it.

`DET_MASTER_CERT_FILE` names a PEM file to trust instead of the system's CAs, or is `noverify`;
`DET_MASTER_CERT_NAME` is the name the master's certificate must carry when it differs from the
address `det` dials (an IP address, a load balancer). A missing file is an error here, where
Determined only warns and continues: failing later with "certificate verify failed" hides why.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cli.errors import CliError

NOVERIFY = "noverify"


@dataclass(frozen=True)
class MasterTrust:
    cert_file: Path | None = None
    noverify: bool = False
    server_name: str | None = None

    def httpx_verify(self) -> ssl.SSLContext | bool:
        """What httpx's `verify=` takes: its own defaults unless the user said otherwise."""
        if self.noverify or self.cert_file:
            return self.ssl_context()
        return True

    def ssl_context(self) -> ssl.SSLContext:
        if self.noverify:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            return context
        cafile = str(self.cert_file) if self.cert_file else None
        return ssl.create_default_context(cafile=cafile)


def master_trust(env: Mapping[str, str] | None = None) -> MasterTrust:
    env = os.environ if env is None else env
    raw = env.get("DET_MASTER_CERT_FILE", "")
    name = env.get("DET_MASTER_CERT_NAME") or None
    if not raw:
        return MasterTrust(server_name=name)
    if raw.lower() == NOVERIFY:
        return MasterTrust(noverify=True, server_name=name)
    path = Path(raw).expanduser()
    if not path.is_file():
        raise CliError(f"DET_MASTER_CERT_FILE={raw}: no such file")
    return MasterTrust(cert_file=path, server_name=name)
