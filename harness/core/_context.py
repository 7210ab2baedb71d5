"""core.init() and core.Context: the Core API's entry point, as in Determined.

On a cluster (``get_cluster_info()`` finds the task's variables) the context talks to the
master with the allocation token. Off a cluster it reports nothing: metrics are printed,
checkpoints go to a local directory, and nothing is ever preempted.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any

from harness._info import ClusterInfo, get_cluster_info
from harness._session import APIError, Session, Transport
from harness.core._checkpoint import (
    CheckpointContext,
    DummyCheckpointContext,
    default_local_storage,
)
from harness.core._distributed import DistributedContext, DummyDistributedContext
from harness.core._preempt import DummyPreemptContext, PreemptContext, PreemptMode
from harness.core._searcher import SearcherContext, max_length_of
from harness.core._storage import DirectoryStorageManager, StorageManager, storage_from_config
from harness.core._train import DummyTrainContext, EarlyExitReason, TrainContext

logger = logging.getLogger("harness.core")


class InvalidHP(Exception):
    """Raise inside ``with core.init()`` to end the trial early: its hyperparameters are bad."""


class Context:
    """A composition of the Core API's parts; use ``with core.init() as core_context``."""

    def __init__(
        self,
        checkpoint: CheckpointContext,
        distributed: DistributedContext | None = None,
        preempt: PreemptContext | None = None,
        train: TrainContext | None = None,
        searcher: SearcherContext | None = None,
        info: ClusterInfo | None = None,
    ) -> None:
        self.checkpoint = checkpoint
        self.distributed = distributed or DummyDistributedContext()
        self.preempt = preempt or DummyPreemptContext(self.distributed)
        self.train = train or DummyTrainContext()
        self.searcher = searcher
        self.info = info

    def start(self) -> Context:
        self.preempt.start()
        return self

    def __enter__(self) -> Context:
        return self.start()

    def close(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        self.preempt.close()
        try:
            self.train.close()
        finally:
            self.distributed.close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if isinstance(exc, InvalidHP):
            logger.info("InvalidHP raised: reporting an early exit")
            self.train.report_early_exit(EarlyExitReason.INVALID_HP)
            self.close()
            return True  # the trial exits 0; the searcher has been told why
        self.close(exc_type, exc, tb)
        return False


def _local_storage(checkpoint_storage: str | dict[str, Any] | None) -> StorageManager:
    if checkpoint_storage is None:
        return DirectoryStorageManager(default_local_storage())
    # a directory, file://, s3://bucket/prefix or gs://bucket/prefix (Determined's shortcuts)
    return storage_from_config(checkpoint_storage)


def _dummy_init(
    distributed: DistributedContext | None,
    checkpoint_storage: str | dict[str, Any] | None,
    preempt_mode: PreemptMode,
) -> Context:
    dist = distributed or DummyDistributedContext()
    train = DummyTrainContext()
    return Context(
        checkpoint=DummyCheckpointContext(dist, _local_storage(checkpoint_storage)),
        distributed=dist,
        preempt=DummyPreemptContext(dist),
        train=train,
        searcher=SearcherContext(train, dist, 1),
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


def _trial_init(
    info: ClusterInfo,
    session: Transport,
    dist: DistributedContext,
    checkpoint_storage: str | dict[str, Any] | None,
    preempt_mode: PreemptMode,
) -> Context:
    trial = info.trial
    storage_cfg = trial.config.get("checkpoint_storage") or {}
    if checkpoint_storage is not None:
        storage = _local_storage(checkpoint_storage)
    else:
        storage = storage_from_config(storage_cfg)
    storage_db_id = _storage_id(session, trial.trial_id, storage_cfg)
    train = TrainContext(session, trial.trial_id, trial.trial_run_id, trial.experiment_id, dist)
    length = max_length_of(trial.config)
    return Context(
        checkpoint=CheckpointContext(
            dist,
            storage,
            session,
            info.task_id,
            info.allocation_id,
            trial_id=trial.trial_id,
            storage_id=storage_db_id,
        ),
        distributed=dist,
        preempt=PreemptContext(session, info.allocation_id, dist, preempt_mode),
        train=train,
        searcher=SearcherContext(train, dist, length[0], length[1]) if length else None,
        info=info,
    )


def init(
    *,
    distributed: DistributedContext | None = None,
    checkpoint_storage: str | dict[str, Any] | None = None,
    preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
    tensorboard_mode: Any = None,
    storage_manager: Any = None,
    session: Transport | None = None,
) -> Context:
    """Build the Core API context; use it as ``with core.init() as core_context:``.

    ``checkpoint_storage`` (a directory, or a storage config) overrides where checkpoints go;
    off-cluster it defaults to ``~/.local/share/determined``. ``session`` replaces the HTTP
    transport (tests). ``tensorboard_mode`` and ``storage_manager`` are accepted for
    Determined compatibility and ignored.
    """
    info = get_cluster_info()
    if info is None:
        return _dummy_init(distributed, checkpoint_storage, preempt_mode)
    dist = distributed or DummyDistributedContext()
    transport = session or Session(info.master_url, info.session_token)
    if info.task_type == "TRIAL":
        return _trial_init(info, transport, dist, checkpoint_storage, preempt_mode)
    # Other task types (commands, notebooks) get no trial reporting, as in Determined.
    ctx = _dummy_init(dist, checkpoint_storage, preempt_mode)
    ctx.info = info
    return ctx
