"""Where a task may point the master's proxy: its own agent's address, on a port it was given or
declared, never a link-local, metadata or unspecified address. Pure: allocation facts in, a
verdict out; the endpoint (api/interactive.py) and the proxy's connect-time check
(api/proxy.py, after resolving names) both ask `check`.

Why: a task reports its own address (POST /api/v1/allocations/{id}/proxy_address) with its
allocation token, and the proxy then connects there carrying the visitor's request. Without
these limits a task could aim the master at any listener the master's host can reach
(localhost-only services, the cloud's metadata endpoint). On a local deployment the agent's
address is loopback, the master's own, so there the port is what limits it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controlplane.domain.proxy_ports import assigned_ports, declared_ports

LOOPBACK = "127.0.0.1"

# Names that reach a cloud's instance metadata (credentials!) from a VM: never a proxy target.
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata", "instance-data"})
METADATA_IPS = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)


def agent_hosts(reported: Iterable[tuple[str, ...] | None]) -> tuple[str, ...]:
    """The addresses of an allocation's agents (one entry per agent: what it reported, None
    when it is not connected). An agent that reported none is taken to be on the master's
    machine, as the scheduler takes it for rendezvous (scheduling/apply.py)."""
    out: list[str] = []
    for addresses in reported:
        if addresses is None:
            continue
        for host in addresses or (LOOPBACK,):
            if host not in out:
                out.append(host)
    return tuple(out)


@dataclass(frozen=True)
class AllocationFacts:
    """What the master knows of an allocation: its agents' addresses (as they reported them)
    and the ports its task may serve on."""

    agent_hosts: tuple[str, ...]
    ports: frozenset[int]

    @staticmethod
    def of(
        task_id: str, agent_hosts: Iterable[str], config: Mapping[str, Any] | None
    ) -> AllocationFacts:
        return AllocationFacts(
            tuple(agent_hosts), frozenset(assigned_ports(task_id)) | declared_ports(config)
        )


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    status: int = 200  # 400: not an address at all; 403: an address this task may not use
    reason: str = ""


def parse(value: str) -> tuple[str, int] | None:
    """(host, port) of `host:port` (a host name or an IPv4 address), else None."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        return None
    if any(c in host for c in "/@?#\\\x00 :[]%"):
        return None
    return host, int(port)


def _canonical(host: str) -> str:
    host = host.lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def forbidden_ip(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why the proxy may never connect to `ip` (None: it may, if it is the agent's)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in METADATA_IPS:
        return "a cloud metadata address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_multicast or ip == ipaddress.ip_address("255.255.255.255"):
        return "a multicast or broadcast address"
    return None


def forbidden_host(host: str) -> str | None:
    """`forbidden_ip` for a host as written (a metadata name counts as its address)."""
    canonical = _canonical(host)
    if canonical in METADATA_NAMES or canonical.endswith(".metadata.google.internal"):
        return "a cloud metadata address"
    try:
        return forbidden_ip(ipaddress.ip_address(canonical))
    except ValueError:
        return None


def check(value: str, facts: AllocationFacts) -> Verdict:
    """May this allocation's task register `value` as the address of its service?"""
    parsed = parse(value)
    if parsed is None:
        return Verdict(
            False, 400, f"proxyAddress must be host:port (a host name or IPv4), got {value!r}"
        )
    host, port = parsed
    why = forbidden_host(host)
    if why is not None:
        return Verdict(False, 403, f"proxyAddress {value!r} is {why}: the proxy never goes there")
    for agent_host in facts.agent_hosts:
        if forbidden_host(agent_host) is None and _canonical(agent_host) == _canonical(host):
            break
    else:
        hosts = ", ".join(facts.agent_hosts) or "none reported"
        return Verdict(
            False,
            403,
            f"proxyAddress {value!r} is not this task's agent (its addresses: {hosts})",
        )
    if port not in facts.ports:
        ports = ", ".join(str(p) for p in sorted(facts.ports))
        return Verdict(
            False,
            403,
            f"proxyAddress port {port} was not given to this task nor declared in its "
            f"environment.proxy_ports (allowed: {ports})",
        )
    return Verdict(True)


def check_resolved(resolved: Iterable[str], agent_ips: Iterable[str]) -> tuple[str | None, str]:
    """At connect time, after DNS: (the IP to connect to, "") if one of the target's addresses
    is one of the agent's and none is forbidden, else (None, why). A name that resolves
    elsewhere than the agent (or to a metadata address) does not pass."""
    agents = {_canonical(ip) for ip in agent_ips}
    chosen = None
    for raw in resolved:
        ip = ipaddress.ip_address(_canonical(raw))
        why = forbidden_ip(ip)
        if why is not None:
            return None, f"the task's address resolves to {why}"
        if chosen is None and str(ip) in agents:
            chosen = str(ip)
    if chosen is None:
        return None, "the task's address does not resolve to its agent's address"
    return chosen, ""
