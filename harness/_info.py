"""What a task knows about where it runs: Determined's ClusterInfo, TrialInfo, RendezvousInfo and
ResourcesInfo.

Determined's ``prep_container`` writes ``cluster.json``, ``trial.json``, ``rendezvous.json`` and
``resources.json`` under ``/run/determined/info`` and ``det.get_cluster_info()`` reads those
files. Ours builds the same objects from the environment the master and the agent set
(determined-behaviour §7.1), so a task needs no prep step, and reads those files too (from
`info_dir`): trial/rendezvous/resources files complete the environment, and a ``cluster.json``
alone is enough. The master sends those files with every task, into the run dir's ``info/``
(``/run/determined/info`` in a container; on the process runtime, under ``$DET_RUN_DIR``).
``get_cluster_info()`` returns None off-cluster, which puts ``core.init()`` into its local mode.
The ``_to_file`` methods write Determined's exact keys.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# Without these, a process is not a task of a cluster (DET_MASTER alone is common on laptops).
REQUIRED = ("DET_MASTER", "DET_TASK_ID", "DET_ALLOCATION_ID", "DET_SESSION_TOKEN", "DET_TASK_TYPE")
DEFAULT_INFO_DIR = "/run/determined/info"


def info_dir(env: Mapping[str, str]) -> Path:
    """Where the task's info files are: ``$DET_INFO_DIR``, else the run dir's ``info/`` (the
    process runtime has no /run/determined; its run dir is elsewhere), else the default."""
    if env.get("DET_INFO_DIR"):
        return Path(env["DET_INFO_DIR"])
    if env.get("DET_RUN_DIR"):
        return Path(env["DET_RUN_DIR"]) / "info"
    return Path(DEFAULT_INFO_DIR)


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


def _as_dict(obj: Any, skip: Iterable[str] = ()) -> dict[str, Any]:
    """Determined's file format: attributes without their leading underscore."""
    return {k.lstrip("_"): v for k, v in vars(obj).items() if k not in skip}


def _read(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None


def _write(path: str | Path, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)


class _Eq:
    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k.lstrip('_')}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class RendezvousInfo(_Eq):
    """The containers of a (multi-container) allocation, ordered by rank."""

    def __init__(
        self, container_addrs: list[str], container_rank: int, container_slot_counts: list[int]
    ) -> None:
        self.container_addrs = container_addrs
        self.container_rank = container_rank
        self.container_slot_counts = container_slot_counts

    def _to_file(self, path: str | Path = f"{DEFAULT_INFO_DIR}/rendezvous.json") -> None:
        _write(path, vars(self))

    @classmethod
    def _from_file(
        cls, path: str | Path = f"{DEFAULT_INFO_DIR}/rendezvous.json"
    ) -> RendezvousInfo | None:
        data = _read(Path(path))
        return None if data is None else cls(**data)


class ResourcesInfo(_Eq):
    def __init__(self, gpu_uuids: list[str]) -> None:
        self._gpu_uuids = gpu_uuids

    @property
    def gpu_uuids(self) -> list[str]:
        return self._gpu_uuids

    def _to_file(self, path: str | Path = f"{DEFAULT_INFO_DIR}/resources.json") -> None:
        _write(path, _as_dict(self))

    @classmethod
    def _from_file(
        cls, path: str | Path = f"{DEFAULT_INFO_DIR}/resources.json"
    ) -> ResourcesInfo | None:
        data = _read(Path(path))
        return None if data is None else cls(**data)


class TrialInfo(_Eq):
    """The trial this task trains (TRIAL tasks only). Determined keeps ``_config``,
    ``_steps_completed``, ``_trial_run_id``, ``_debug`` private; we also offer them without the
    underscore."""

    def __init__(
        self,
        trial_id: int,
        experiment_id: int,
        trial_seed: int,
        hparams: dict[str, Any],
        config: dict[str, Any],
        steps_completed: int,
        trial_run_id: int,
        debug: bool,
        inter_node_network_interface: str | None,
    ) -> None:
        self.trial_id = trial_id
        self.experiment_id = experiment_id
        self.trial_seed = trial_seed
        self.hparams = hparams
        self._config = config
        self._steps_completed = steps_completed
        self._trial_run_id = trial_run_id
        self._debug = debug
        self._inter_node_network_interface = inter_node_network_interface

    @property
    def config(self) -> dict[str, Any]:
        return self._config

    @property
    def steps_completed(self) -> int:
        return self._steps_completed

    @property
    def trial_run_id(self) -> int:
        return self._trial_run_id

    @property
    def debug(self) -> bool:
        return self._debug

    @property
    def inter_node_network_interface(self) -> str | None:
        return self._inter_node_network_interface

    @classmethod
    def _from_env(cls, env: Mapping[str, str] | None = None) -> TrialInfo:
        env = os.environ if env is None else env
        config = _json(env, "DET_EXPERIMENT_CONFIG", {})
        if not isinstance(config, dict):
            raise ValueError("DET_EXPERIMENT_CONFIG must be a JSON object")
        return cls(
            trial_id=_int(env, "DET_TRIAL_ID"),
            experiment_id=_int(env, "DET_EXPERIMENT_ID"),
            trial_seed=_int(env, "DET_TRIAL_SEED"),
            hparams=_json(env, "DET_HPARAMS", {}),
            config=config,
            steps_completed=_int(env, "DET_STEPS_COMPLETED"),
            trial_run_id=_int(env, "DET_TRIAL_RUN_ID", 1),
            debug=bool(config.get("debug", False)),
            inter_node_network_interface=env.get("DET_INTER_NODE_NETWORK_INTERFACE") or None,
        )

    def _to_file(self, path: str | Path = f"{DEFAULT_INFO_DIR}/trial.json") -> None:
        _write(path, _as_dict(self))

    @classmethod
    def _from_file(cls, path: str | Path = f"{DEFAULT_INFO_DIR}/trial.json") -> TrialInfo | None:
        data = _read(Path(path))
        return None if data is None else cls(**data)


class ClusterInfo(_Eq):
    """Properties of the task as it runs on a cluster (Determined's constructor and properties;
    ``resources_id`` and ``container_id`` are ours, for the launcher and the log shipper)."""

    def __init__(
        self,
        master_url: str,
        cluster_id: str,
        agent_id: str,
        slot_ids: list[int],
        task_id: str,
        allocation_id: str,
        session_token: str,
        task_type: str,
        master_cert_name: str | None = None,
        master_cert_file: str | None = None,
        latest_checkpoint: str | None = None,
        trial_info: TrialInfo | None = None,
        rendezvous_info: RendezvousInfo | None = None,
        resources_info: ResourcesInfo | None = None,
        *,
        resources_id: str = "",
        container_id: str = "",
    ) -> None:
        self.master_url = master_url.rstrip("/")
        self.cluster_id = cluster_id
        self.agent_id = agent_id
        self.slot_ids = slot_ids
        self.task_id = task_id
        self.allocation_id = allocation_id
        self.session_token = session_token
        self.task_type = task_type
        self.master_cert_name = master_cert_name
        self.master_cert_file = master_cert_file
        self._latest_checkpoint = latest_checkpoint
        self._trial_info = trial_info
        self._rendezvous_info = rendezvous_info
        self._resources_info = resources_info
        self.resources_id = resources_id
        self.container_id = container_id

    @property
    def latest_checkpoint(self) -> str | None:
        """The checkpoint to resume from; always None for non-trial tasks."""
        return self._latest_checkpoint if self.task_type == "TRIAL" else None

    @property
    def trial(self) -> TrialInfo:
        if self.task_type != "TRIAL" or self._trial_info is None:
            raise RuntimeError(
                f'you cannot use the .trial property when .task_type ("{self.task_type}") != '
                '"TRIAL"'
            )
        return self._trial_info

    @property
    def trial_info(self) -> TrialInfo | None:
        return self._trial_info

    @property
    def user_data(self) -> dict[str, Any]:
        """The experiment config's ``data`` field ({} for non-trial tasks)."""
        if self.task_type != "TRIAL" or self._trial_info is None:
            return {}
        return dict(self._trial_info._config.get("data") or {})

    def _rendezvous(self) -> RendezvousInfo:
        if self.task_type != "TRIAL" or self._rendezvous_info is None:
            return RendezvousInfo(["127.0.0.1"], 0, [len(self.slot_ids)])
        return self._rendezvous_info

    @property
    def container_addrs(self) -> list[str]:
        """Addresses of every container of the allocation, ordered by rank."""
        return self._rendezvous().container_addrs

    @property
    def container_rank(self) -> int:
        return self._rendezvous().container_rank

    @property
    def container_slot_counts(self) -> list[int]:
        return self._rendezvous().container_slot_counts

    @property
    def gpu_uuids(self) -> list[str]:
        return [] if self._resources_info is None else self._resources_info.gpu_uuids

    def _to_file(self, path: str | Path = f"{DEFAULT_INFO_DIR}/cluster.json") -> None:
        skip = ("_trial_info", "_rendezvous_info", "_resources_info", "resources_id")
        _write(path, _as_dict(self, (*skip, "container_id")))

    @classmethod
    def _from_file(
        cls, path: str | Path = f"{DEFAULT_INFO_DIR}/cluster.json"
    ) -> ClusterInfo | None:
        data = _read(Path(path))
        if data is None:
            return None
        here = Path(path).parent
        return cls(
            trial_info=TrialInfo._from_file(here / "trial.json"),
            rendezvous_info=RendezvousInfo._from_file(here / "rendezvous.json"),
            resources_info=ResourcesInfo._from_file(here / "resources.json"),
            **data,
        )

    @classmethod
    def _from_env(cls, env: Mapping[str, str] | None = None) -> ClusterInfo | None:
        env = os.environ if env is None else env
        if any(not env.get(name) for name in REQUIRED):
            return None
        task_type = env["DET_TASK_TYPE"]
        here = info_dir(env)
        trial = None
        if task_type == "TRIAL":
            trial = TrialInfo._from_file(here / "trial.json") or TrialInfo._from_env(env)
        return cls(
            master_url=env["DET_MASTER"],
            cluster_id=env.get("DET_CLUSTER_ID", ""),
            agent_id=env.get("DET_AGENT_ID", ""),
            slot_ids=[int(s) for s in _json(env, "DET_SLOT_IDS", [])],
            task_id=env["DET_TASK_ID"],
            allocation_id=env["DET_ALLOCATION_ID"],
            session_token=env["DET_SESSION_TOKEN"],
            task_type=task_type,
            master_cert_name=env.get("DET_MASTER_CERT_NAME") or None,
            master_cert_file=env.get("DET_MASTER_CERT_FILE") or None,
            latest_checkpoint=env.get("DET_LATEST_CHECKPOINT") or None,
            trial_info=trial,
            rendezvous_info=RendezvousInfo._from_file(here / "rendezvous.json"),
            resources_info=ResourcesInfo._from_file(here / "resources.json"),
            resources_id=env.get("DET_RESOURCES_ID", ""),
            container_id=env.get("DET_CONTAINER_ID", ""),
        )


# Determined's injection point: scripts (and its own tests) set ``_info._info = ClusterInfo(...)``.
_info: ClusterInfo | str | None = "unloaded"


def get_cluster_info(env: Mapping[str, str] | None = None) -> ClusterInfo | None:
    """This task's ClusterInfo, or None when not running as a task of a cluster.

    The task's environment decides when it has the variables the master and the agent set;
    otherwise ``cluster.json`` in `info_dir` (default /run/determined/info), as Determined's
    prep_container writes it, when it exists. ``env`` replaces ``os.environ`` (tests).
    """
    if env is None and isinstance(_info, ClusterInfo):
        return _info
    e = os.environ if env is None else env
    if all(e.get(name) for name in REQUIRED):
        return ClusterInfo._from_env(e)
    return ClusterInfo._from_file(info_dir(e) / "cluster.json")
