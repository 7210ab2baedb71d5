"""The ports a task's service may be reached on through the master's proxy: a few derived from
its task id (the harness takes the first free one for its gate or sshd), and the ones its config
declares (`environment.proxy_ports`, Determined's key). Pure."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The ports a task's service may take (its gate, or a shell's sshd): a few, derived from the
# task id, below Linux's ephemeral range (32768+) so that outgoing connections rarely hold them.
PORT_BASE, PORT_SPAN, PORT_CHOICES = 20000, 12000, 8


def assigned_ports(task_id: str) -> tuple[int, ...]:
    """The ports task `task_id` is given (the harness takes the first free one). Derived, not
    stored, so every worker and a restarted master compute the same ones."""
    out: list[int] = []
    counter = 0
    while len(out) < PORT_CHOICES:
        digest = hashlib.sha256(f"resolute-proxy-port|{task_id}|{counter}".encode()).digest()
        for i in range(0, len(digest), 2):
            port = PORT_BASE + int.from_bytes(digest[i : i + 2], "big") % PORT_SPAN
            if port not in out and len(out) < PORT_CHOICES:
                out.append(port)
        counter += 1
    return tuple(out)


def declared_ports(config: Mapping[str, Any] | None) -> frozenset[int]:
    """`environment.proxy_ports[].proxy_port` of a task's config (Determined's key)."""
    env = (config or {}).get("environment")
    ports = env.get("proxy_ports") if isinstance(env, Mapping) else None
    out = set()
    for item in ports if isinstance(ports, list) else []:
        port = item.get("proxy_port") if isinstance(item, Mapping) else None
        if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536:
            out.add(port)
    return frozenset(out)


@dataclass(frozen=True)
class ProxyPort:
    """One `environment.proxy_ports` entry, with Determined's defaults."""

    port: int
    tcp: bool = False  # the WebSocket to it carries raw TCP (`proxy_tcp`)
    unauthenticated: bool = False  # anyone may reach it, no login (`unauthenticated`)
    default_service_id: bool = False  # reached as `/proxy/{task}/` instead of `{task}:{port}`


def proxy_ports(config: Mapping[str, Any] | None) -> tuple[ProxyPort, ...]:
    """The task's declared ports, in config order, malformed entries left out (the expconf
    schema refuses them at submission; this reads whatever is stored)."""
    env = (config or {}).get("environment")
    items = env.get("proxy_ports") if isinstance(env, Mapping) else None
    out: list[ProxyPort] = []
    for item in items if isinstance(items, list) else []:
        port = item.get("proxy_port") if isinstance(item, Mapping) else None
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            continue
        flags = [
            item.get(k) is True for k in ("proxy_tcp", "unauthenticated", "default_service_id")
        ]
        out.append(ProxyPort(port, *flags))
    return tuple(out)


def split_service(service_id: str) -> tuple[str, int | None]:
    """(task id, port) of a proxy service id: `{task id}:{port}` names one of the task's
    `proxy_ports` (Determined's service ids), a bare task id the task's own service (a notebook's,
    or the port declared with `default_service_id`)."""
    task_id, sep, port = service_id.rpartition(":")
    if sep and task_id and port.isascii() and port.isdigit() and len(port) <= 5:
        number = int(port)
        if 0 < number < 65536:
            return task_id, number
    return service_id, None


def find_port(ports: tuple[ProxyPort, ...], port: int | None) -> ProxyPort | None:
    """The declared port a service id names: `{task}:{port}` one declared without
    `default_service_id`, a bare task id the one declared with it (as Determined registers
    them: an entry has exactly one service id)."""
    for item in ports:
        if port is None and item.default_service_id:
            return item
        if port is not None and item.port == port and not item.default_service_id:
            return item
    return None
