"""The start-up script of a pool's dynamic agents (EC2 user-data, GCE startup-script).

`render_setup_script(AgentSetup(...))` fills `agent_setup.sh.tmpl` (beside this module) for one
pool (reference §2.8). Every value reaches the script as a shell-quoted assignment and every
free text (the user's scripts, agent.yaml, the certificate) as base64, so nothing a user writes
in a pool's config is ever read as shell code by the script itself. The script documents at its
top the environment variables that move its paths and its metadata server (tests run the very
same script in a sandbox).
"""

from __future__ import annotations

import base64
import json
import shlex
import string
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

Cloud = Literal["aws", "gcp"]
SlotType = Literal["cuda", "cpu", "none"]
TEMPLATE_NAME = "agent_setup.sh.tmpl"
# The clouds' own metadata servers; the script uses them unless RESOLUTE_METADATA_URL is set.
DEFAULT_METADATA_URLS: dict[str, str] = {
    "aws": "http://169.254.169.254",
    "gcp": "http://metadata.google.internal",
}


class SetupError(ValueError):
    """An input the script cannot be rendered from; the message names it."""


def slot_type_for(gpus_per_instance: int, cpu_slots_allowed: bool) -> SlotType:
    """GPUs → cuda; no GPU but CPU slots allowed → cpu; otherwise none (Determined's rule)."""
    if gpus_per_instance > 0:
        return "cuda"
    return "cpu" if cpu_slots_allowed else "none"


@dataclass(frozen=True)
class AgentSetup:
    """What a pool's start-up script needs, as plain values (the provider config maps to it).

    `master_url` is the address agents dial, already resolved (scheme http or https, a host, an
    optional port, no path). Texts are given as they are (`startup_script` runs first and a
    non-zero exit stops the script; `agent_config_file_contents` becomes agent.yaml, a mapping
    is written as JSON). `agent_install_command` is shell run on the VM to install `det-agent`;
    without it (or without `det-agent` after it) the `agent_docker_image` runs in Docker.
    """

    cloud: Cloud
    master_url: str
    resource_pool: str
    slot_type: SlotType
    master_cert: str = ""
    master_cert_name: str = ""
    agent_reconnect_attempts: int = 5
    agent_reconnect_backoff: float = 5.0
    startup_script: str = ""
    agent_config_file_contents: str | Mapping[str, Any] | None = None
    container_startup_script: str = ""
    agent_install_command: str = ""
    agent_docker_image: str = ""
    agent_docker_network: str = "default"
    agent_docker_runtime: str = "runc"
    metadata_url: str | None = None


@dataclass(frozen=True)
class MasterAddress:
    tls: bool
    host: str
    port: int


def master_address(url: str) -> MasterAddress:
    """Split the master URL; the port defaults to the scheme's (80, 443)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise SetupError(f"master_url {url!r}: the scheme must be http or https")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise SetupError(f"master_url {url!r}: must not have a path")
    try:
        port = parts.port
    except ValueError:
        raise SetupError(f"master_url {url!r}: invalid port") from None
    if not parts.hostname:
        raise SetupError(f"master_url {url!r}: no host")
    tls = parts.scheme == "https"
    return MasterAddress(tls=tls, host=parts.hostname, port=port or (443 if tls else 80))


class _ScriptTemplate(string.Template):
    # `$` belongs to bash; placeholders are @@{name} and nothing else is one.
    delimiter = "@@"
    pattern = r"@@(?:(?P<escaped>@@)|{(?P<braced>[a-z_][a-z0-9_]*)}|(?P<named>(?!))|(?P<invalid>))"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _config_text(contents: str | Mapping[str, Any] | None) -> str:
    if contents is None:
        return ""
    if isinstance(contents, Mapping):
        return json.dumps(contents, indent=2) + "\n"  # JSON is YAML
    return contents


def _check(setup: AgentSetup) -> MasterAddress:
    if setup.cloud not in get_args(Cloud):
        raise SetupError(f"cloud {setup.cloud!r}: must be aws or gcp")
    if setup.slot_type not in get_args(SlotType):
        raise SetupError(f"slot_type {setup.slot_type!r}: must be cuda, cpu or none")
    if not setup.resource_pool:
        raise SetupError("resource_pool must not be empty")
    if setup.agent_reconnect_attempts < 0 or setup.agent_reconnect_backoff < 0:
        raise SetupError("agent_reconnect_attempts and agent_reconnect_backoff must be >= 0")
    if setup.metadata_url is not None and not setup.metadata_url.startswith(
        ("http://", "https://")
    ):
        raise SetupError(f"metadata_url {setup.metadata_url!r}: must be an http(s) URL")
    for name, value in vars(setup).items():
        if isinstance(value, str) and "\0" in value:
            raise SetupError(f"{name} must not contain a NUL character")
    return master_address(setup.master_url)


def _values(setup: AgentSetup, master: MasterAddress) -> dict[str, str]:
    metadata_url = (setup.metadata_url or DEFAULT_METADATA_URLS[setup.cloud]).rstrip("/")
    raw = {
        "cloud": setup.cloud,
        "master_host": master.host,
        "master_port": str(master.port),
        "master_tls": "true" if master.tls else "false",
        "master_cert_name": setup.master_cert_name,
        "master_cert_b64": _b64(setup.master_cert) if setup.master_cert else "",
        "resource_pool": setup.resource_pool,
        "slot_type": setup.slot_type,
        "reconnect_attempts": str(int(setup.agent_reconnect_attempts)),
        "reconnect_backoff": f"{float(setup.agent_reconnect_backoff):g}",
        "startup_script_b64": _b64(setup.startup_script) if setup.startup_script else "",
        "agent_config_b64": _b64(_config_text(setup.agent_config_file_contents)),
        "container_startup_script_b64": (
            _b64(setup.container_startup_script) if setup.container_startup_script else ""
        ),
        "agent_install": setup.agent_install_command,
        "agent_docker_image": setup.agent_docker_image,
        "agent_docker_network": setup.agent_docker_network,
        "agent_docker_runtime": setup.agent_docker_runtime,
        "metadata_url": metadata_url,
    }
    return {key: shlex.quote(value) for key, value in raw.items()}


def template_text() -> str:
    return resources.files("provisioners").joinpath(TEMPLATE_NAME).read_text()


def render_setup_script(setup: AgentSetup) -> str:
    """The script for `setup`'s pool, as bash source text; raises SetupError on a bad input."""
    master = _check(setup)
    return _ScriptTemplate(template_text()).substitute(_values(setup, master))
