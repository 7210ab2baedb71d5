"""`environment.proxy_ports` as the proxy reads it: the declared ports with Determined's
defaults, and which port a proxy service id (`{task}:{port}` or a bare task id) names."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.proxy_ports import ProxyPort, find_port, proxy_ports, split_service

TASK = "7.0b8f9a3e-4c59-4a57-9d7e-2f0f2b6c1a11"


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], ()),
        ([{"proxy_port": 8000}], (ProxyPort(8000),)),
        (
            [{"proxy_port": 8000, "proxy_tcp": False}, {"proxy_port": 6000, "proxy_tcp": True}],
            (ProxyPort(8000), ProxyPort(6000, tcp=True)),
        ),
        ([{"proxy_port": 1, "unauthenticated": True}], (ProxyPort(1, unauthenticated=True),)),
        ([{"proxy_port": 9, "default_service_id": True}], (ProxyPort(9, default_service_id=True),)),
        # what the schema refuses at submission is left out, never guessed at
        ([{"proxy_port": 0}, {"proxy_port": 65536}, {"proxy_port": "80"}], ()),
        ([{"proxy_port": True}, {"port": 80}, "8000", None], ()),
        ([{"proxy_port": 80, "proxy_tcp": "yes"}], (ProxyPort(80),)),  # only true is true
    ],
)
def test_declared_ports(items: list[Any], expected: tuple[ProxyPort, ...]) -> None:
    assert proxy_ports({"environment": {"proxy_ports": items}}) == expected


@pytest.mark.parametrize(
    "config",
    [None, {}, {"environment": None}, {"environment": {"proxy_ports": None}}, {"environment": []}],
)
def test_no_ports_declared(config: Any) -> None:
    assert proxy_ports(config) == ()


@pytest.mark.parametrize(
    ("service", "expected"),
    [
        (f"{TASK}:8000", (TASK, 8000)),
        (f"{TASK}:1", (TASK, 1)),
        (f"{TASK}:65535", (TASK, 65535)),
        (TASK, (TASK, None)),
        # not a port: the whole id is a task id (which then names no task)
        (f"{TASK}:0", (f"{TASK}:0", None)),
        (f"{TASK}:65536", (f"{TASK}:65536", None)),
        (f"{TASK}:080000", (f"{TASK}:080000", None)),
        (f"{TASK}:80a", (f"{TASK}:80a", None)),
        (f"{TASK}:", (f"{TASK}:", None)),
        (f"{TASK}:８０", (f"{TASK}:８０", None)),  # fullwidth digits are not a port
        (":8000", (":8000", None)),
        ("a:b:8000", ("a:b", 8000)),
    ],
)
def test_split_service(service: str, expected: tuple[str, int | None]) -> None:
    assert split_service(service) == expected


@given(st.text(alphabet="ab.-0123456789:", min_size=1, max_size=30))
def test_split_service_keeps_the_task_id_whole(service: str) -> None:
    task, port = split_service(service)
    if port is None:
        assert task == service
    else:
        head, _, tail = service.rpartition(":")
        assert (task, port) == (head, int(tail)) and 0 < port < 65536


PORTS = (
    ProxyPort(8000),
    ProxyPort(6000, tcp=True),
    ProxyPort(7000, default_service_id=True),
)


@pytest.mark.parametrize(
    ("port", "expected"),
    [
        (8000, ProxyPort(8000)),
        (6000, ProxyPort(6000, tcp=True)),
        (None, ProxyPort(7000, default_service_id=True)),
        # the default service's port is reached by the bare task id only, as in Determined
        (7000, None),
        (9000, None),
    ],
)
def test_find_port(port: int | None, expected: ProxyPort | None) -> None:
    assert find_port(PORTS, port) == expected


def test_no_default_service_without_the_flag() -> None:
    assert find_port((ProxyPort(8000),), None) is None
