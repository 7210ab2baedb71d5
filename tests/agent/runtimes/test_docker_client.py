"""agent/runtimes/docker_client.py without an engine: the adapter's pooling and what a client
for a Unix socket is given (a real engine's connection count: test_docker_api_calls.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("docker")
from docker.transport import UnixHTTPAdapter

from agent.runtimes.docker_client import OnePoolUnixAdapter

URLS = [
    "http+docker://localhost/v1.47/containers/create",
    "http+docker://localhost/v1.47/containers/0123abcd/start",
    "http+docker://localhost/v1.47/containers/0123abcd/wait?condition=not-running",
    "http+docker://localhost/v1.47/containers/4567ef01/logs?follow=1",
]


def test_every_url_of_the_socket_shares_one_pool() -> None:
    adapter = OnePoolUnixAdapter("http+unix:///var/run/docker.sock", max_pool_size=8)
    pools = {id(adapter.get_connection(url)) for url in URLS}
    assert len(pools) == 1
    pool = adapter.get_connection(URLS[0])
    assert pool.pool.maxsize == 8  # the runtime's thread count still bounds idle connections
    adapter.close()


def test_the_sdks_adapter_keeps_a_pool_per_url() -> None:
    """Why the module exists: if the SDK ever shares its pools, this fails and it can go."""
    adapter = UnixHTTPAdapter("http+unix:///var/run/docker.sock")
    assert len({id(adapter.get_connection(url)) for url in URLS}) == len(URLS)
    adapter.close()
