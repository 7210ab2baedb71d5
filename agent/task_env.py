"""What a task container is given by the agent: its environment and its command (pure).

The master's TaskSpec already holds the task's own DET_* variables (ids, session token, config)
and the user's environment_variables. The agent adds where the master is as seen from the task,
its own id and the task's slots (Determined's agent/internal/containers/spec.go), and the proxy
settings. The runtime adds DET_RUN_DIR, DET_WORKDIR and PYTHONPATH.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agent.protocol import Device, DeviceType, MasterInfo, TaskSpec

LAUNCHER_MODULE = "harness.exec.launch"
DOCKER_PYTHON = "python3"
PROXY_KEYS = ("http_proxy", "https_proxy", "ftp_proxy", "no_proxy")


@dataclass(frozen=True)
class AgentEnv:
    """The agent-wide facts that go into every task's environment."""

    agent_id: str
    master_host: str
    master_port: int
    use_tls: bool = False
    # Machine has CUDA slots: tasks holding none of them must not see the GPUs at all.
    hides_gpus: bool = False
    proxies: Mapping[str, str] = field(default_factory=dict)

    @property
    def master_url(self) -> str:
        return f"{'https' if self.use_tls else 'http'}://{self.master_host}:{self.master_port}"


def slot_ids(devices: Sequence[Device]) -> str:
    """DET_SLOT_IDS as Determined writes it: a JSON list without spaces, e.g. `[0,1]`."""
    return json.dumps([d.id for d in devices], separators=(",", ":"))


def task_environment(
    spec: TaskSpec,
    container_id: str,
    devices: Sequence[Device],
    agent: AgentEnv,
    master_info: MasterInfo | None = None,
) -> dict[str, str]:
    """The task's variables: proxies < the spec's (master and user) < the agent's DET_* ones."""
    env: dict[str, str] = {}
    for key, value in agent.proxies.items():
        if value:
            env[key] = value
            env[key.upper()] = value
    env.update(spec.environment)
    if master_info is not None:
        env.setdefault("DET_CLUSTER_ID", master_info.cluster_id)
        env.setdefault("DET_MASTER_ID", master_info.master_id)
    env.setdefault("DET_CONTAINER_ID", container_id)
    env.setdefault("DET_TASK_ID", spec.task_id)
    env.setdefault("DET_ALLOCATION_ID", spec.allocation_id)
    env.setdefault("DET_TASK_TYPE", spec.task_type)
    env.update(
        {
            "DET_MASTER": agent.master_url,
            "DET_MASTER_HOST": agent.master_host,
            "DET_MASTER_ADDR": agent.master_host,
            "DET_MASTER_PORT": str(agent.master_port),
            "DET_AGENT_ID": agent.agent_id,
            "DET_SLOT_IDS": slot_ids(devices),
            "DET_USE_TLS": "true" if agent.use_tls else "false",
        }
    )
    gpus = [d for d in devices if d.type == DeviceType.CUDA]
    if gpus:
        # UUIDs name the same GPU whatever the numbering inside the task (visible_gpus, docker).
        env["CUDA_VISIBLE_DEVICES"] = ",".join(d.uuid or str(d.id) for d in gpus)
    elif agent.hides_gpus:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def task_argv(spec: TaskSpec, python: str) -> tuple[str, ...]:
    """The harness launcher wraps the user's command (it ships logs, forwards signals).

    ``-S``: the launcher is standard library only, so it skips site-packages and its .pth
    files (tens of milliseconds in a venv with torch); the user's command starts normally.
    """
    return (python, "-S", "-m", LAUNCHER_MODULE, *spec.argv)
