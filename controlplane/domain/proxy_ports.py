"""The ports a task's service may be reached on through the master's proxy: a few derived from
its task id (the harness takes the first free one for its gate or sshd), and the ones its config
declares (`environment.proxy_ports`, Determined's key). Pure."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
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
