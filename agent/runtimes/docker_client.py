"""The docker SDK's client, with its connections to a local engine kept and reused.

The SDK's adapter for a Unix socket keeps one connection pool per URL
(docker/transport/unixconn.py), and each container's URLs are its own
(``/containers/{id}/start``, ``…/wait``, ``…/logs``), so every call of a task's life opened a
fresh connection to dockerd and dropped an older pool, closing its socket: a connect, an accept
and a close per request on both sides. Here one pool serves the socket, so a call reuses an idle
keep-alive connection (a streaming log keeps its own until it ends, as before).

A Unix socket never goes through a proxy, yet ``requests`` reads the proxy variables and
``.netrc`` for every request; ``trust_env`` off skips that for the socket only (a TCP
``DOCKER_HOST`` keeps the SDK's behaviour, proxies included).
"""

from __future__ import annotations

from typing import Any

import docker
from docker.transport import UnixHTTPAdapter

SOCKET_SCHEME = "http+docker://"
_POOL_KEY = "http+docker://localhost"  # every URL of the socket shares this pool


class OnePoolUnixAdapter(UnixHTTPAdapter):
    """UnixHTTPAdapter with one pool for the socket instead of one per URL."""

    def get_connection(self, url: Any, proxies: Any = None) -> Any:
        return super().get_connection(_POOL_KEY, proxies)


def open_client(*, timeout_s: int, max_pool_size: int) -> docker.DockerClient:
    """``docker.from_env`` (``DOCKER_HOST`` or the default socket), reusing connections to a
    Unix socket."""
    client = docker.from_env(timeout=timeout_s, max_pool_size=max_pool_size)
    api = client.api
    adapter = getattr(api, "_custom_adapter", None)
    if type(adapter) is UnixHTTPAdapter:
        shared = OnePoolUnixAdapter(
            f"http+unix://{adapter.socket_path}",
            timeout=adapter.timeout,
            max_pool_size=adapter.max_pool_size,
        )
        api._custom_adapter = shared
        api.mount(SOCKET_SCHEME, shared)
        adapter.close()
        api.trust_env = False
    return client
