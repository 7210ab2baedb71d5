"""What a task knows about where it runs: Determined's ClusterInfo and TrialInfo.

Determined's harness reads these from files a prep step writes; ours reads the environment the
master and the agent set (docs: determined-behaviour §7.1). ``get_cluster_info()`` returns None
off-cluster, which puts ``core.init()`` into its local mode.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Without these, a process is not a task of a cluster (DET_MASTER alone is common on laptops).
REQUIRED = ("DET_MASTER", "DET_TASK_ID", "DET_ALLOCATION_ID", "DET_SESSION_TOKEN", "DET_TASK_TYPE")


def _json(env: Mapping[str, str], name: str, default: Any) -> Any:
    raw = env.get(name)
    if not raw:
        return default
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{name} is not valid JSON: {exc}") from None


def _int(env: Mapping[str, str], name: str, default: int = 0) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


@dataclass(frozen=True)
class TrialInfo:
    """The trial this task trains (TRIAL tasks only)."""

    trial_id: int
    experiment_id: int
    trial_seed: int
    hparams: dict[str, Any]
    config: dict[str, Any]
    steps_completed: int
    trial_run_id: int
    debug: bool = False
    unique_port_offset: int = 0
    inter_node_network_interface: str | None = None

    @property
    def _config(self) -> dict[str, Any]:
        # Determined's examples read `info.trial._config`; keep them working unchanged.
        return self.config

    @classmethod
    def _from_env(cls, env: Mapping[str, str]) -> TrialInfo:
        config = _json(env, "DET_EXPERIMENT_CONFIG", {})
        return cls(
            trial_id=_int(env, "DET_TRIAL_ID"),
            experiment_id=_int(env, "DET_EXPERIMENT_ID"),
            trial_seed=_int(env, "DET_TRIAL_SEED"),
            hparams=_json(env, "DET_HPARAMS", {}),
            config=config,
            steps_completed=_int(env, "DET_STEPS_COMPLETED"),
            trial_run_id=_int(env, "DET_TRIAL_RUN_ID", 1),
            debug=bool(config.get("debug", False)),
            unique_port_offset=_int(env, "DET_UNIQUE_PORT_OFFSET"),
            inter_node_network_interface=env.get("DET_INTER_NODE_NETWORK_INTERFACE") or None,
        )


@dataclass(frozen=True)
class ClusterInfo:
    """Properties of the task as it runs on a cluster."""

    master_url: str
    cluster_id: str
    agent_id: str
    slot_ids: list[int]
    task_id: str
    allocation_id: str
    session_token: str
    task_type: str
    master_cert_name: str | None = None
    master_cert_file: str | None = None
    latest_checkpoint: str | None = None
    trial_info: TrialInfo | None = None
    container_rank: int = 0
    container_addrs: list[str] = field(default_factory=list)
    resources_id: str = ""
    container_id: str = ""

    @property
    def trial(self) -> TrialInfo:
        if self.trial_info is None:
            raise RuntimeError(f"a {self.task_type} task has no trial info")
        return self.trial_info

    @property
    def user_data(self) -> dict[str, Any]:
        if self.trial_info is None:
            return {}
        return dict(self.trial_info.config.get("data") or {})

    @property
    def gpu_uuids(self) -> list[str]:
        return []

    @classmethod
    def _from_env(cls, env: Mapping[str, str]) -> ClusterInfo | None:
        if any(not env.get(name) for name in REQUIRED):
            return None
        task_type = env["DET_TASK_TYPE"]
        return cls(
            master_url=env["DET_MASTER"].rstrip("/"),
            cluster_id=env.get("DET_CLUSTER_ID", ""),
            agent_id=env.get("DET_AGENT_ID", ""),
            slot_ids=[int(s) for s in _json(env, "DET_SLOT_IDS", [])],
            task_id=env["DET_TASK_ID"],
            allocation_id=env["DET_ALLOCATION_ID"],
            session_token=env["DET_SESSION_TOKEN"],
            task_type=task_type,
            master_cert_name=env.get("DET_MASTER_CERT_NAME") or None,
            master_cert_file=env.get("DET_MASTER_CERT_FILE") or None,
            latest_checkpoint=(env.get("DET_LATEST_CHECKPOINT") or None)
            if task_type == "TRIAL"
            else None,
            trial_info=TrialInfo._from_env(env) if task_type == "TRIAL" else None,
            resources_id=env.get("DET_RESOURCES_ID", ""),
            container_id=env.get("DET_CONTAINER_ID", ""),
        )


def get_cluster_info(env: Mapping[str, str] | None = None) -> ClusterInfo | None:
    """This task's ClusterInfo, or None when not running as a task of a cluster."""
    return ClusterInfo._from_env(os.environ if env is None else env)
