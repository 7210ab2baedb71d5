"""What a task container is given by the agent: its environment and its command (pure).

The master's TaskSpec already holds the task's own DET_* variables (ids, session token, config)
and the user's environment_variables. The agent adds where the master is as seen from the task,
its own id and the task's slots (Determined's agent/internal/containers/spec.go), and the proxy
settings. The runtime adds DET_RUN_DIR, DET_WORKDIR and PYTHONPATH.

The master also sends ``info/cluster.json`` (what the real determined package reads instead of
the environment); the agent completes it with the same facts of its own, so the file and the
environment agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agent.protocol import Device, DeviceType, MasterInfo, TaskSpec

LAUNCHER_MODULE = "harness.exec.launch"
# What ``python -c`` runs: `-m` would import runpy (importlib.util, contextlib, functools,
# collections, types), ~3 ms of CPU that every task, a trivial `det cmd run` included, paid
# before the launcher's first line. sys.argv[1:] is the user's command either way.
LAUNCHER_CODE = f"import sys;from {LAUNCHER_MODULE} import main;sys.exit(main())"
CLUSTER_INFO_FILE = "info/cluster.json"
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
    # Where the master reaches this machine; interactive tasks listen there.
    advertise_address: str = "127.0.0.1"

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
            "RESOLUTE_AGENT_ADDRESS": agent.advertise_address,
        }
    )
    gpus = [d for d in devices if d.type == DeviceType.CUDA]
    if gpus:
        # UUIDs name the same GPU whatever the numbering inside the task (visible_gpus, docker).
        env["CUDA_VISIBLE_DEVICES"] = ",".join(d.uuid or str(d.id) for d in gpus)
    elif agent.hides_gpus:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def task_files(spec: TaskSpec, env: Mapping[str, str]) -> dict[str, str]:
    """The spec's files, with the agent's facts in ``info/cluster.json``: the master's address as
    the task reaches it, the cluster id, this agent and the task's slots (as in ``env``)."""
    files = dict(spec.files)
    raw = files.get(CLUSTER_INFO_FILE)
    if raw is None:
        return files
    try:
        info = json.loads(raw)
    except ValueError:
        return files  # not ours to repair; the task reports it when it reads the file
    if not isinstance(info, dict):
        return files
    info["master_url"] = env.get("DET_MASTER", info.get("master_url", ""))
    info["cluster_id"] = env.get("DET_CLUSTER_ID", info.get("cluster_id", ""))
    info["agent_id"] = env.get("DET_AGENT_ID", info.get("agent_id", ""))
    if env.get("DET_SLOT_IDS"):
        info["slot_ids"] = json.loads(env["DET_SLOT_IDS"])
    files[CLUSTER_INFO_FILE] = json.dumps(info, separators=(",", ":"))
    return files


def task_argv(spec: TaskSpec, python: str) -> tuple[str, ...]:
    """The harness launcher wraps the user's command (it ships logs, forwards signals).

    ``-S``: the launcher is standard library only, so it skips site-packages and its .pth
    files (tens of milliseconds in a venv with torch); the user's command starts normally.
    ``-c`` rather than ``-m`` (see LAUNCHER_CODE).
    """
    return (python, "-S", "-c", LAUNCHER_CODE, *spec.argv)
