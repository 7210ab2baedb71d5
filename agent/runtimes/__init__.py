"""Container runtimes behind one protocol (``base.ContainerRuntime``): ``docker`` and ``process``.

``choose_runtime("auto")`` picks docker when an engine answers, else process. The docker SDK is
imported only by ``agent.runtimes.docker``, and only when that runtime is asked for, so an agent
on a machine without the SDK still runs the process runtime.
"""

from __future__ import annotations

from pathlib import Path

from agent.runtimes.base import ContainerRuntime

RUNTIME_NAMES = ("docker", "process")
PING_TIMEOUT_S = 2.0


def docker_available(timeout_s: float = PING_TIMEOUT_S) -> bool:
    """Whether a Docker engine answers a ping (``DOCKER_HOST`` or the default socket) in time."""
    try:
        from agent.runtimes import docker as docker_runtime
    except ImportError:  # the SDK is not installed
        return False
    return docker_runtime.ping(timeout_s)


def choose_runtime(preference: str) -> str:
    """``"docker"`` or ``"process"`` as asked; ``"auto"``: docker when an engine answers."""
    if preference == "auto":
        return "docker" if docker_available() else "process"
    if preference not in RUNTIME_NAMES:
        raise ValueError(
            f"unknown container runtime {preference!r}; expected auto, docker or process"
        )
    return preference


def make_runtime(name: str, *, state_dir: Path, task_python: str = "") -> ContainerRuntime:
    """The runtime called ``name``; ``state_dir`` holds the process runtime's task folders and
    ``task_python`` is its Python for requests that name none (the agent names one in each)."""
    if name == "process":
        from agent.runtimes.process import ProcessRuntime

        return ProcessRuntime(state_dir, python=task_python)
    if name == "docker":
        from agent.runtimes.docker import DockerRuntime

        return DockerRuntime()
    raise ValueError(f"unknown container runtime {name!r}; expected docker or process")
