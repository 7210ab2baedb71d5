"""The files a task finds under its run dir's ``info/`` (determined-behaviour §7.1, wire §5.2).

Determined's ``prep_container`` writes ``cluster.json``, ``trial.json``, ``resources.json`` and
``rendezvous.json`` inside the container, and the real ``determined`` package's
``get_cluster_info()`` reads only those files, never the environment. Our master writes them
instead, as TaskSpec files: a task then needs no prep step, and code written for the real
package finds its cluster, trial and checkpoint to resume from unchanged. The keys and shapes
are exactly those of Determined's ``_to_file()``; ``_from_file`` passes them to constructors as
keyword arguments, so an extra or missing key would break it.

Pure: plain values in, JSON-ready dicts out. The agent completes ``cluster.json`` with the facts
only it knows (the master's address as the task reaches it, the cluster id it was given), the
same ones it adds to the environment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

INFO_DIR = "info"
CLUSTER_FILE = f"{INFO_DIR}/cluster.json"
TRIAL_FILE = f"{INFO_DIR}/trial.json"
RESOURCES_FILE = f"{INFO_DIR}/resources.json"
RENDEZVOUS_FILE = f"{INFO_DIR}/rendezvous.json"


def cluster_info(
    *,
    task_id: str,
    allocation_id: str,
    session_token: str,
    task_type: str,
    agent_id: str,
    slot_ids: Sequence[int],
    master_url: str = "",
    cluster_id: str = "",
    master_cert_name: str | None = None,
    master_cert_file: str | None = None,
    latest_checkpoint: str | None = None,
) -> dict[str, Any]:
    return {
        "master_url": master_url,
        "cluster_id": cluster_id,
        "agent_id": agent_id,
        "slot_ids": list(slot_ids),
        "task_id": task_id,
        "allocation_id": allocation_id,
        "session_token": session_token,
        "task_type": task_type,
        "master_cert_name": master_cert_name,
        "master_cert_file": master_cert_file,
        "latest_checkpoint": latest_checkpoint,
    }


def cluster_info_from_env(
    env: Mapping[str, str], *, agent_id: str, slot_ids: Sequence[int]
) -> dict[str, Any]:
    """``cluster.json`` for a container whose master-set variables are ``env``.

    Built from the same variables the task's environment carries, so the file and the
    environment never disagree about the task, its token or the checkpoint to resume from.
    """
    return cluster_info(
        task_id=env["DET_TASK_ID"],
        allocation_id=env["DET_ALLOCATION_ID"],
        session_token=env["DET_SESSION_TOKEN"],
        task_type=env["DET_TASK_TYPE"],
        agent_id=agent_id,
        slot_ids=slot_ids,
        master_url=env.get("DET_MASTER", ""),
        cluster_id=env.get("DET_CLUSTER_ID", ""),
        master_cert_name=env.get("DET_MASTER_CERT_NAME") or None,
        master_cert_file=env.get("DET_MASTER_CERT_FILE") or None,
        latest_checkpoint=env.get("DET_LATEST_CHECKPOINT") or None,
    )


def trial_info(
    *,
    trial_id: int,
    experiment_id: int,
    trial_seed: int,
    hparams: Mapping[str, Any],
    config: Mapping[str, Any],
    steps_completed: int,
    trial_run_id: int,
    inter_node_network_interface: str | None = None,
) -> dict[str, Any]:
    """``trial.json``; ``config`` is the fully expanded experiment config (core.init reads its
    ``checkpoint_storage``), and ``debug`` comes from it as Determined's TrialInfo takes it."""
    return {
        "trial_id": trial_id,
        "experiment_id": experiment_id,
        "trial_seed": trial_seed,
        "hparams": dict(hparams),
        "config": dict(config),
        "steps_completed": steps_completed,
        "trial_run_id": trial_run_id,
        "debug": bool(config.get("debug", False)),
        "inter_node_network_interface": inter_node_network_interface,
    }


def resources_info(gpu_uuids: Sequence[str]) -> dict[str, Any]:
    """``resources.json``: the GPUs the container was given (empty on CPU slots)."""
    return {"gpu_uuids": list(gpu_uuids)}


def rendezvous_info(
    container_addrs: Sequence[str], container_rank: int, container_slot_counts: Sequence[int]
) -> dict[str, Any]:
    return {
        "container_addrs": list(container_addrs),
        "container_rank": container_rank,
        "container_slot_counts": list(container_slot_counts),
    }


def encode(data: Mapping[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))
