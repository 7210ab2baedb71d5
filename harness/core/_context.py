"""core.init() and core.Context: the Core API's entry point, as in Determined 0.38.1.

On a cluster (``get_cluster_info()`` finds the task's variables) the context talks to the
master with the allocation token. Off a cluster the same user code runs against local stand-ins:
metrics are printed and appended to a local JSON-lines file, checkpoints go to a local
directory, and nothing is ever preempted. A task of a cluster (DET_TASK_ID or DET_RUN_DIR set)
never falls into that mode: without its cluster info, or when the master cannot be reached,
``init()`` raises `NotOnCluster` with what is missing.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from harness._info import REQUIRED, ClusterInfo, get_cluster_info, info_dir
from harness._session import APIError, MasterUnreachable, Session, Transport
from harness.core._checkpoint import (
    CheckpointContext,
    DummyCheckpointContext,
    default_local_storage,
)
from harness.core._distributed import DistributedContext, DummyDistributedContext
from harness.core._preempt import DummyPreemptContext, PreemptContext, PreemptMode
from harness.core._profiler import (
    DummyExperimentalCoreContext,
    DummyProfilerContext,
    ProfilerContext,
)
from harness.core._searcher import (
    DummySearcherContext,
    SearcherContext,
    SearcherContextMissing,
    max_length_of,
)
from harness.core._storage import DirectoryStorageManager, StorageManager, storage_from_config
from harness.core._tensorboard import (
    MetricWriter,
    TensorboardManager,
    TensorboardMode,
    base_path,
    storage_writer,
    sync_path,
)
from harness.core._train import DummyTrainContext, EarlyExitReason, TrainContext

logger = logging.getLogger("harness.core")

ALERT_LEVELS = {
    "info": "LOG_LEVEL_INFO",
    "warn": "LOG_LEVEL_WARNING",
    "debug": "LOG_LEVEL_DEBUG",
    "error": "LOG_LEVEL_ERROR",
}


class InvalidHP(Exception):
    """Raise inside ``with core.init()`` to end the trial early: its hyperparameters are bad."""

    def __init__(self, msg: str = "...") -> None:
        super().__init__(msg)


class NotOnCluster(RuntimeError):
    """``core.init()`` runs inside a task of a cluster but cannot reach that cluster."""


def _refuse_off_cluster(env: Any = None) -> None:
    """Inside a task, a missing cluster info is an error, never a silent off-cluster run (its
    metrics and checkpoints would go nowhere the master knows of)."""
    e = os.environ if env is None else env
    task = {k: e[k] for k in ("DET_TASK_ID", "DET_RUN_DIR") if e.get(k)}
    if not task:
        return
    missing = [name for name in REQUIRED if not e.get(name)]
    where = ", ".join(f"{k}={v}" for k, v in task.items())
    message = (
        f"core.init() runs inside a task ({where}) but found no cluster info: "
        f"{', '.join(missing)} not set and no {info_dir(e) / 'cluster.json'}. "
        "Refusing to run off-cluster (metrics and checkpoints would not reach the master)."
    )
    logger.error(message)
    raise NotOnCluster(message)


class Context:
    """A composition of the Core API's parts; use ``with core.init() as core_context``."""

    def __init__(
        self,
        checkpoint: CheckpointContext,
        _session: Transport | None = None,
        distributed: DistributedContext | None = None,
        preempt: PreemptContext | None = None,
        train: TrainContext | None = None,
        searcher: SearcherContext | None = None,
        info: ClusterInfo | None = None,
        experimental: Any = None,
        profiler: Any = None,
        _metrics: Any = None,
        _tensorboard_manager: TensorboardManager | None = None,
        _heartbeat: Any = None,
        _log_shipper: Any = None,
    ) -> None:
        self.checkpoint = checkpoint
        self.distributed = distributed or DummyDistributedContext()
        self.preempt = preempt or DummyPreemptContext(self.distributed)
        self.train = train or DummyTrainContext()
        self.searcher = searcher or SearcherContextMissing()
        self.info = info
        self.experimental = experimental or DummyExperimentalCoreContext()
        self.profiler = profiler or DummyProfilerContext()
        self._tensorboard_manager = _tensorboard_manager
        self._session = _session

    def start(self) -> Context:
        self.preempt.start()
        return self

    def __enter__(self) -> Context:
        return self.start()

    def alert(
        self,
        title: str | None = None,
        description: str | None = None,
        level: str | None = "info",
    ) -> None:
        """Send a custom webhook event about this trial (``POST /api/v1/webhooks/custom``)."""
        if self._session is None:
            raise ValueError("init() needs to be called before sending alert.")
        if self.info is None or self.info.task_type != "TRIAL":
            raise ValueError("alert() only works for trial type of task.")
        if level not in ALERT_LEVELS:
            raise ValueError(f"alert level must be one of {sorted(ALERT_LEVELS)}, got {level!r}")
        self._session.request(
            "POST",
            "/api/v1/webhooks/custom",
            body={
                "data": {
                    "title": title or "",
                    "description": description or "",
                    "level": ALERT_LEVELS[level],
                },
                "experimentId": self.info.trial.experiment_id,
                "trialId": self.info.trial.trial_id,
            },
        )

    def close(
        self,
        exc_type: type[BaseException] | None = None,
        exc_val: BaseException | None = None,
        exc_tb: TracebackType | None = None,
    ) -> None:
        """Stop the preemption watcher, flush metrics (and TensorBoard files), close the
        distributed context. A metrics error met in the background is raised here."""
        self.profiler._close()  # its last samples are reported before the metrics flush
        self.preempt.close()
        try:
            self.train.close()
        finally:
            self.distributed.close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool:
        if isinstance(exc_val, InvalidHP):
            logger.info("InvalidHP raised: reporting an early exit")
            self.train.report_early_exit(EarlyExitReason.INVALID_HP)
            self.close()
            return True  # the trial exits 0; the searcher has been told why
        self.close(exc_type, exc_val, exc_tb)
        return False


def metrics_file(env: Any = None) -> Path:
    """Off-cluster metrics file: ``$DET_METRICS_FILE``, else one file per process under
    ``<local data dir>/metrics/`` (next to the default local checkpoints)."""
    e = os.environ if env is None else env
    if e.get("DET_METRICS_FILE"):
        return Path(e["DET_METRICS_FILE"])
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return default_local_storage() / "metrics" / f"{stamp}-{os.getpid()}.jsonl"


def _local_storage(checkpoint_storage: str | dict[str, Any] | None) -> StorageManager:
    if checkpoint_storage is None:
        return DirectoryStorageManager(default_local_storage())
    # a directory, file://, s3://bucket/prefix or gs://bucket/prefix (Determined's shortcuts)
    return storage_from_config(checkpoint_storage)


def _dummy_init(
    distributed: DistributedContext | None,
    checkpoint_storage: str | dict[str, Any] | None,
    preempt_mode: PreemptMode,
    *,
    tensorboard_path: Path | None = None,
) -> Context:
    dist = distributed or DummyDistributedContext()
    train = DummyTrainContext(tensorboard_path, metrics_file() if dist.rank == 0 else None)
    return Context(
        checkpoint=DummyCheckpointContext(dist, _local_storage(checkpoint_storage)),
        distributed=dist,
        preempt=DummyPreemptContext(dist, preempt_mode),
        train=train,
        searcher=DummySearcherContext(dist),
        info=None,
    )


def _storage_id(session: Transport, trial_id: int, storage_cfg: dict[str, Any]) -> int | None:
    try:
        answer = session.request(
            "POST",
            "/api/v1/runs/start",
            body={"runId": trial_id, "checkpointStorage": storage_cfg},
        )
    except APIError as exc:  # an older master without runs/start: checkpoints work without it
        logger.debug("runs/start refused: %s", exc)
        return None
    value = (answer or {}).get("storageId")
    return int(value) if value is not None else None


def _tensorboard(
    info: ClusterInfo, dist: DistributedContext, mode: TensorboardMode
) -> tuple[TensorboardManager, MetricWriter | None]:
    trial = info.trial
    cfg = trial.config.get("checkpoint_storage") or {}
    sync = sync_path(info.cluster_id, trial.experiment_id, trial.trial_id)
    dest = storage_writer(cfg, sync)
    # <cluster>/tensorboard/experiment is every user's; below it, the experiment owner's.
    shared = dest.parents[2] if isinstance(dest, Path) else None
    manager = TensorboardManager(base_path(cfg, info.allocation_id, dist.rank), dest, shared=shared)
    writer = MetricWriter(manager.base_path) if mode is TensorboardMode.AUTO else None
    return manager, writer


def _trial_init(
    info: ClusterInfo,
    session: Transport,
    dist: DistributedContext,
    checkpoint_storage: str | dict[str, Any] | None,
    preempt_mode: PreemptMode,
    tensorboard_mode: TensorboardMode,
) -> Context:
    trial = info.trial
    storage_cfg = trial.config.get("checkpoint_storage") or {}
    if checkpoint_storage is not None:
        storage = _local_storage(checkpoint_storage)
    else:
        storage = storage_from_config(storage_cfg)
    try:
        storage_db_id = _storage_id(session, trial.trial_id, storage_cfg)
    except MasterUnreachable as exc:
        message = f"core.init() cannot reach the master at {info.master_url}: {exc}"
        logger.error(message)
        raise NotOnCluster(message) from exc
    tb_manager, tb_writer = _tensorboard(info, dist, tensorboard_mode)
    train = TrainContext(
        session,
        trial.trial_id,
        trial.trial_run_id,
        trial.experiment_id,
        dist,
        tensorboard_mode,
        tb_manager,
        tb_writer,
    )
    length = max_length_of(trial.config)
    searcher = SearcherContext(train, dist, length[0], length[1]) if length else None
    return Context(
        checkpoint=CheckpointContext(
            dist,
            storage,
            session,
            info.task_id,
            info.allocation_id,
            trial_id=trial.trial_id,
            storage_id=storage_db_id,
            before_report=train._flush_reports,
            # Determined syncs TensorBoard files after each checkpoint report in AUTO mode.
            after_report=tb_manager.sync if tensorboard_mode is TensorboardMode.AUTO else None,
        ),
        _session=session,
        distributed=dist,
        preempt=PreemptContext(session, info.allocation_id, dist, preempt_mode),
        train=train,
        searcher=searcher,
        info=info,
        _tensorboard_manager=tb_manager,
        profiler=ProfilerContext(
            info.agent_id, train._report_trial_metrics, local_rank=dist.local_rank
        ),
    )


def init(
    *,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | dict[str, Any] | None = None,
    preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
    session: Transport | None = None,
) -> Context:
    """Build the Core API context; use it as ``with core.init() as core_context:``.

    As Determined 0.38.1's ``core.init``: ``distributed`` is required for multi-slot tasks;
    ``checkpoint_storage`` (a directory, a ``file://``, ``s3://`` or ``gs://`` shortcut, or a
    storage config) overrides where checkpoints go, off-cluster defaulting to
    ``~/.local/share/determined``; ``preempt_mode`` says who asks the master about preemption;
    ``tensorboard_mode`` AUTO writes metrics as TensorBoard event files and syncs them, MANUAL
    leaves both to the user. ``session`` (ours) replaces the HTTP transport (tests).
    """
    preempt_mode = PreemptMode(preempt_mode)
    tensorboard_mode = TensorboardMode(tensorboard_mode)
    info = get_cluster_info()
    if info is None:
        _refuse_off_cluster()
        return _dummy_init(distributed, checkpoint_storage, preempt_mode)
    if distributed is None and (len(info.container_addrs) > 1 or len(info.slot_ids) > 1):
        raise ValueError("you must provide a valid DistributedContext for a multi-slot task")
    dist = distributed or DummyDistributedContext()
    transport = session or Session(info.master_url, info.session_token)
    if info.task_type == "TRIAL":
        return _trial_init(
            info, transport, dist, checkpoint_storage, preempt_mode, tensorboard_mode
        )
    # Other task types (commands, notebooks) get no trial reporting, as in Determined.
    ctx = _dummy_init(dist, checkpoint_storage, preempt_mode)
    ctx.info = info
    ctx.train = DummyTrainContext()  # a command's metrics are logged, not written to a file
    ctx._session = transport
    return ctx
