"""``init()`` and ``Trainer``: run a ``PyTorchTrial`` under the Core API (Determined's semantics).

``Trainer.fit`` trains batch after batch; after each batch the pure ``due_after`` says which
periods end (report, validate, checkpoint, the end of training) and the loop acts on them.
Checkpoints hold the models, optimizers, LR schedulers, AMP scaler, callback states, every
worker's RNG states (python, numpy when it is loaded, torch, CUDA) and the training loader's
position, so a trial resumed from one trains on exactly the batches, with exactly the random
numbers, of an uninterrupted run. Preemption (and ``context.set_stop_requested``) is checked
whenever a period ends: the trainer checkpoints and returns, and the task exits 0 to be resumed.
The trial's ``build_callbacks()`` hooks run where Determined runs them; with no callbacks the
per-batch cost is one empty-list check.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import math
import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

import harness
from harness import core
from harness.pytorch import _callback
from harness.pytorch._callback import PyTorchCallback
from harness.pytorch._checkpoint_state import (
    STATE_FILE,
    load_wrapped_states,
    restore_scaler_and_callbacks,
    unwrap,
    write_load_data,
)
from harness.pytorch._context import PyTorchTrialContext, auto_steps
from harness.pytorch._data import BatchStream, as_torch_loader, epoch_length
from harness.pytorch._metrics import as_metrics, mean_metrics
from harness.pytorch._reducer import reduce_rows
from harness.pytorch._rng import rng_state, set_random_seeds, set_rng_state
from harness.pytorch._trial import PyTorchTrial
from harness.pytorch._units import (
    NEVER,
    Batch,
    Epoch,
    TrainUnit,
    due_after,
    length_in_batches,
    progress,
    searcher_max_length,
    unit_from_config,
)

logger = logging.getLogger("harness.pytorch")

# Progress goes with a training report at most this often (and always at the end of a fit): it
# only moves the WebUI's bar, and a request per report was a third of the reporting cost.
PROGRESS_EVERY_S = 5.0
CHECKPOINT_POLICIES = ("best", "all", "none")


class _ShouldExit(Exception):
    """Preempted or asked to stop: checkpoint (unless current) and return from fit()."""


# --- init() -----------------------------------------------------------------------------------


def _distributed_backend(info: harness.ClusterInfo) -> core.DistributedContext | None:
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
        return core.DistributedContext.from_torch_distributed()
    if len(info.container_addrs) > 1 or len(info.slot_ids) > 1:
        raise ValueError(
            "a trial with several slots needs a distributed launch layer: use "
            "`python3 -m harness.launch.torch_distributed -- python3 train.py` (or torchrun) "
            "as the entrypoint"
        )
    return None


@contextlib.contextmanager
def init(
    *,
    hparams: dict[str, Any] | None = None,
    exp_conf: dict[str, Any] | None = None,
    distributed: core.DistributedContext | None = None,
    aggregation_frequency: int = 1,
    enable_tensorboard_logging: bool = True,
) -> Iterator[PyTorchTrialContext]:
    """``with harness.pytorch.init() as context:`` a PyTorchTrialContext over ``core.init()``."""
    info = harness.get_cluster_info()
    local = info is None or info.task_type != "TRIAL"
    dist_ctx = distributed
    created_group = False
    if local:
        trial_seed, steps, num_gpus = None, 0, torch.cuda.device_count()
    else:
        assert info is not None
        if dist_ctx is None:
            import torch.distributed as tdist

            already = tdist.is_available() and tdist.is_initialized()
            dist_ctx = _distributed_backend(info)
            created_group = dist_ctx is not None and not already
        trial_seed = info.trial.trial_seed
        exp_conf = info.trial._config
        if hparams is None:
            hparams = info.trial.hparams
        steps = info.trial.steps_completed
        num_gpus = len(info.gpu_uuids)
        set_random_seeds(trial_seed)
    try:
        with core.init(distributed=dist_ctx, preempt_mode=core.PreemptMode.WorkersAskChief) as cc:
            yield PyTorchTrialContext(
                core_context=cc,
                trial_seed=trial_seed,
                hparams=hparams,
                slots_per_trial=cc.distributed.get_size(),
                num_gpus=num_gpus,
                exp_conf=exp_conf,
                aggregation_frequency=aggregation_frequency,
                steps_completed=steps,
                enable_tensorboard_logging=enable_tensorboard_logging,
            )
    finally:
        if created_group:
            import torch.distributed as tdist

            if tdist.is_initialized():
                tdist.destroy_process_group()


# --- Trainer ----------------------------------------------------------------------------------


class Trainer:
    """Trains a ``PyTorchTrial``: ``Trainer(trial, context).fit(max_length=Epoch(5), ...)``."""

    def __init__(self, trial: PyTorchTrial, context: PyTorchTrialContext) -> None:
        self._trial = trial
        self._context = context
        self._core = context._core
        self._info = harness.get_cluster_info()
        self._local_training = self._info is None or self._info.task_type != "TRIAL"

    def fit(
        self,
        checkpoint_period: TrainUnit | None = None,
        validation_period: TrainUnit | None = None,
        max_length: TrainUnit | None = None,
        reporting_period: TrainUnit = Batch(100),
        checkpoint_policy: str = "best",
        latest_checkpoint: str | None = None,
        step_zero_validation: bool = False,
        test_mode: bool = False,
        profiling_enabled: bool = False,
    ) -> None:
        """Train for ``max_length``, validating and checkpointing per the periods.

        On a cluster ``latest_checkpoint`` defaults to the trial's latest checkpoint
        (``get_cluster_info().latest_checkpoint``), so pause/activate resumes by itself;
        ``max_length`` defaults to the experiment's ``searcher.max_length`` (deprecated in
        Determined 0.38, as there).
        """
        if checkpoint_policy not in CHECKPOINT_POLICIES:
            raise ValueError(f"checkpoint_policy must be one of {CHECKPOINT_POLICIES}")
        searcher_metric: str | None = None
        smaller_is_better = True
        if self._local_training:
            if checkpoint_policy == "best":
                logger.warning("checkpoint_policy='best' needs a cluster: using 'all'")
                checkpoint_policy = "all"
            if max_length is None:
                raise ValueError("max_length must be given in local training mode")
        else:
            assert self._info is not None
            if test_mode:
                raise ValueError("test_mode is only supported in local training mode")
            config = self._info.trial._config
            searcher = config.get("searcher") or {}
            smaller_is_better = bool(searcher.get("smaller_is_better", True))
            searcher_metric = searcher.get("metric")
            if latest_checkpoint is None:
                latest_checkpoint = self._info.latest_checkpoint
            if max_length is None:
                gbs = self._context.get_hparams().get("global_batch_size")
                max_length = unit_from_config(
                    searcher_max_length(config),
                    global_batch_size=int(gbs) if gbs else None,
                    records_per_epoch=config.get("records_per_epoch"),
                    what="searcher.max_length",
                )
                if max_length is None:
                    raise ValueError("fit(max_length=Batch(n) or Epoch(n)) must be set")
                warnings.warn(
                    "max_length taken from the experiment's searcher.max_length (deprecated "
                    "in Determined 0.38): pass fit(max_length=...)",
                    FutureWarning,
                    stacklevel=2,
                )
        if not isinstance(max_length, (Batch, Epoch)) or not isinstance(max_length.value, int):
            raise TypeError("max_length must be harness.pytorch.Batch(int) or Epoch(int)")
        profiler = self._core.profiler
        if profiling_enabled and not self._local_training:
            profiler.on()  # system metrics while training, as Determined's Trainer does
        elif profiling_enabled:
            logger.warning("profiling_enabled: system metrics are profiled only on a cluster")
        self._context.reset_reducers()
        try:
            _Loop(
                trial=self._trial,
                context=self._context,
                max_length=max_length,
                checkpoint_period=checkpoint_period or NEVER,
                validation_period=validation_period or NEVER,
                reporting_period=reporting_period,
                checkpoint_policy=checkpoint_policy,
                latest_checkpoint=latest_checkpoint,
                step_zero_validation=step_zero_validation,
                test_mode=test_mode,
                searcher_metric=searcher_metric,
                smaller_is_better=smaller_is_better,
                trial_id=self._info.trial.trial_id
                if not self._local_training and self._info
                else 0,
            ).run()
        finally:
            if profiling_enabled:
                profiler.off()

    def configure_profiler(
        self,
        sync_timings: bool = True,
        enabled: bool = False,
        begin_on_batch: int = 0,
        end_after_batch: int | None = None,
    ) -> None:
        """Deprecated in Determined: use ``fit(..., profiling_enabled=True)``. Turns the system
        metrics profiler on (``enabled``) until the end of the next ``fit``."""
        warnings.warn(
            "`trainer.configure_profiler` has been replaced with "
            "`fit(..., profiling_enabled=True)` and will be removed in a future release.",
            FutureWarning,
            stacklevel=2,
        )
        if enabled and not self._local_training:
            self._core.profiler.on()


class _Loop:
    """One fit(): the training loop and its state."""

    def __init__(
        self,
        *,
        trial: PyTorchTrial,
        context: PyTorchTrialContext,
        max_length: TrainUnit,
        checkpoint_period: TrainUnit,
        validation_period: TrainUnit,
        reporting_period: TrainUnit,
        checkpoint_policy: str,
        latest_checkpoint: str | None,
        step_zero_validation: bool,
        test_mode: bool,
        searcher_metric: str | None,
        smaller_is_better: bool,
        trial_id: int,
    ) -> None:
        self.trial = trial
        self.context = context
        self.core = context._core
        self.dist = context.distributed
        self.is_chief = self.dist.get_rank() == 0
        self.max_length = max_length
        self.periods = (reporting_period, validation_period, checkpoint_period)
        self.checkpoint_policy = checkpoint_policy
        self.latest_checkpoint = latest_checkpoint
        self.step_zero_validation = step_zero_validation
        self.test_mode = test_mode
        self.searcher_metric = searcher_metric
        self.smaller_is_better = smaller_is_better
        self.trial_id = trial_id
        self.batches_trained = 0
        self.last_val = -1
        self.last_ckpt = -1
        self.best_val: float | None = None
        self.pending: list[dict[str, Any]] = []
        self.clock = time.monotonic
        self.progress_sent: tuple[float, float] | None = None  # (value, when)
        self.named_callbacks: dict[str, PyTorchCallback] = dict(trial.build_callbacks())
        self.callbacks = list(self.named_callbacks.values())
        _callback.warn_deprecated(self.callbacks, stacklevel=3)  # the caller of fit()

    # --- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        with contextlib.ExitStack() as stack:
            for callback in self.callbacks:
                callback.on_trial_startup(self.context.get_initial_batch(), self.latest_checkpoint)
                stack.callback(callback.on_trial_shutdown)
            self._run()

    def _run(self) -> None:
        size, rank = self.dist.get_size(), self.dist.get_rank()
        seed = self.context.get_trial_seed()
        train_loader = as_torch_loader(
            self.trial.build_training_data_loader(),
            num_replicas=size, rank=rank, seed=seed, training=True,
        )  # fmt: skip
        kind = type(self.trial)
        has_batch = kind.evaluate_batch is not PyTorchTrial.evaluate_batch
        has_full = kind.evaluate_full_dataset is not PyTorchTrial.evaluate_full_dataset
        if not (has_batch or has_full):
            raise NotImplementedError("the trial defines neither evaluate_batch nor "
                                      "evaluate_full_dataset")  # fmt: skip
        self.full_dataset = has_full and not has_batch
        self.val_loader = as_torch_loader(
            self.trial.build_validation_data_loader(),
            num_replicas=1 if self.full_dataset else size, rank=0 if self.full_dataset else rank,
            seed=seed, training=False,
        )  # fmt: skip
        self.epoch_len = epoch_length(train_loader)
        self.context._epoch_len = self.epoch_len
        self.total = length_in_batches(self.max_length, self.epoch_len)
        self.stream = BatchStream(train_loader, self.epoch_len)
        if self.latest_checkpoint:
            self._restore(self.latest_checkpoint)
        else:
            self.stream.seek(0, None)
        if self.test_mode:
            self.total = min(self.total, self.batches_trained + 1)
        for callback in self.callbacks:
            callback.on_training_start()
        try:
            self._train()
        except _ShouldExit:
            if self.last_ckpt != self.batches_trained:
                self._checkpoint()
            logger.info("stopping at batch %d (preempted or asked to stop)", self.batches_trained)
        except harness.InvalidHP:
            if self.last_ckpt != self.batches_trained:
                self._checkpoint()
            raise
        if self.is_chief:
            self._report_progress(final=True)

    def _train(self) -> None:
        if self.step_zero_validation and self.batches_trained == 0 and self.last_val != 0:
            self._validate()
        for model in self.context.models:
            model.train()
        reporting, validation, checkpointing = self.periods
        callbacks = self.callbacks
        n = self.context._aggregation_frequency
        # DDP reads no_sync() when the forward pass runs: to skip the all-reduce on the batches
        # inside an aggregation window the whole train_batch runs under it (the gradients are
        # the same either way; Determined wraps only backward, which leaves the all-reduce on).
        accumulate = n > 1 and self.dist.get_size() > 1
        while self.batches_trained < self.total:
            batch = self.context.to_device(self.stream.next())
            batch_idx = self.batches_trained
            epoch_idx, in_epoch = divmod(batch_idx, self.epoch_len)
            self.context._current_batch_idx = batch_idx
            if callbacks and in_epoch == 0:
                _callback.on_epoch_start(callbacks, epoch_idx)
            if accumulate and (batch_idx + 1) % n:
                with self.context._no_sync():
                    out = self.trial.train_batch(batch, epoch_idx, batch_idx)
            else:
                out = self.trial.train_batch(batch, epoch_idx, batch_idx)
            self.pending.append(as_metrics(out, "train_batch"))
            self.batches_trained += 1
            self._step_schedulers(batch_idx)
            if callbacks and in_epoch == self.epoch_len - 1:
                for callback in callbacks:
                    callback.on_training_epoch_end(epoch_idx)
            due = due_after(
                self.batches_trained,
                epoch_len=self.epoch_len,
                total_batches=self.total,
                reporting_period=reporting,
                validation_period=validation,
                checkpoint_period=checkpointing,
                last_validation=self.last_val,
                last_checkpoint=self.last_ckpt,
            )
            if not due.any:
                continue
            self._report_training()
            if due.validate:
                self._validate()
            if due.checkpoint and self.last_ckpt != self.batches_trained:
                self._checkpoint()
            if not due.done:
                self._check_stop()

    def _step_schedulers(self, batch_idx: int) -> None:
        for sched in self.context.lr_schedulers:
            n = auto_steps(sched, batch_idx, self.context._aggregation_frequency, self.epoch_len)
            for _ in range(n):
                sched.step()

    def _check_stop(self) -> None:
        if self.core.preempt.should_preempt() or self.context.get_stop_requested():
            raise _ShouldExit()

    # --- reporting -----------------------------------------------------------------------------

    def _report_training(self) -> None:
        if not self.pending:
            return
        rows, self.pending = self.pending, []
        metrics = mean_metrics(rows)
        if self.dist.get_size() > 1:
            metrics = mean_metrics(self.dist.allgather(metrics))
        metrics.update(self.context.reduce_metrics(for_training=True))
        self.context._reducers.reset(training=True)
        if self.is_chief:
            self.core.train.report_training_metrics(self.batches_trained, metrics)
            self._report_progress(final=self.batches_trained >= self.total)
        if self.callbacks:
            self._on_workload_end(metrics, rows)

    def _on_workload_end(self, metrics: dict[str, Any], rows: list[dict[str, Any]]) -> None:
        """on_training_workload_end: the report's means and each batch's metrics (worker mean)."""
        per_batch = [mean_metrics([row]) for row in rows]
        if self.dist.get_size() > 1:
            gathered = self.dist.allgather(per_batch)
            per_batch = [mean_metrics(list(batch)) for batch in zip(*gathered)]  # noqa: B905
        avg = dict(metrics)
        avg.setdefault("batches", self.batches_trained)
        avg.setdefault("epochs", self.batches_trained // self.epoch_len)
        for callback in self.callbacks:
            callback.on_training_workload_end(avg_metrics=avg, batch_metrics=per_batch)

    def _report_progress(self, *, final: bool) -> None:
        """Progress with a report: the first, then at most every PROGRESS_EVERY_S, and the last
        (``final``) unless the value already sent is the same."""
        value = progress(self.batches_trained, self.total)
        now = self.clock()
        last = self.progress_sent
        if last is not None and (
            last[0] == value or (not final and now - last[1] < PROGRESS_EVERY_S)
        ):
            return
        self.core.train.report_progress(value)
        self.progress_sent = (value, now)

    @torch.no_grad()
    def _validate(self) -> dict[str, Any]:
        for model in self.context.models:
            model.eval()
        for callback in self.callbacks:
            callback.on_validation_start()
        self.context._reducers.reset(training=False)
        if self.full_dataset:
            metrics = self.trial.evaluate_full_dataset(self.val_loader) if self.is_chief else {}
            if self.dist.get_size() > 1:
                metrics = self.dist.broadcast(metrics)
        else:
            metrics = self._evaluate_batches()
        for model in self.context.models:
            model.train()
        metrics = mean_metrics([as_metrics(metrics, "validation")])
        metrics.update(self.context.reduce_metrics(for_training=False))
        for callback in self.callbacks:
            callback.on_validation_end(metrics)
        self.last_val = self.batches_trained
        if self.searcher_metric and self.searcher_metric not in metrics:
            raise RuntimeError(
                f"the searcher's metric {self.searcher_metric!r} is not among the validation "
                f"metrics {sorted(metrics)}"
            )
        if self.is_chief:  # with batches and epochs, as Determined's (ASHA's time_metric)
            done = dict(batches=self.batches_trained, epochs=self.batches_trained // self.epoch_len)
            self.core.train.report_validation_metrics(self.batches_trained, {**done, **metrics})
        if self._checkpoint_after_validation(metrics):
            self._checkpoint()
        return metrics

    def _evaluate_batches(self) -> dict[str, Any]:
        evaluate = self.trial.evaluate_batch
        takes_idx = len(inspect.signature(evaluate).parameters) >= 2
        rows: list[dict[str, Any]] = []
        weights: list[float] = []
        for callback in self.callbacks:
            callback.on_validation_epoch_start()
        for idx, raw in enumerate(self.val_loader):
            batch = self.context.to_device(raw)
            out = evaluate(batch, idx) if takes_idx else evaluate(batch)
            rows.append(mean_metrics([as_metrics(out, "evaluate_batch")]))
            weights.append(float(self.trial.get_batch_length(batch)))
        for callback in self.callbacks:
            callback.on_validation_epoch_end(rows)
        if self.dist.get_size() > 1:
            gathered = self.dist.allgather((rows, weights))
            rows = [r for part in gathered for r in part[0]]
            weights = [w for part in gathered for w in part[1]]
        return reduce_rows(rows, weights, self.trial.evaluation_reducer())

    def _checkpoint_after_validation(self, metrics: dict[str, Any]) -> bool:
        if self.checkpoint_policy == "none" or self.last_ckpt == self.batches_trained:
            return False
        if self.checkpoint_policy == "all":
            return True
        value = metrics.get(self.searcher_metric or "")
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        before: float | None = None
        if self.is_chief:
            try:
                before = self.core.train.get_experiment_best_validation()
            except Exception as exc:  # the decision is an optimisation: never fail training on it
                logger.debug("best validation unavailable: %s", exc)
        if self.dist.get_size() > 1:
            before = self.dist.broadcast(before)
        if before is None:
            return True
        return value < before if self.smaller_is_better else value > before

    # --- checkpoints ---------------------------------------------------------------------------

    def _checkpoint(self) -> None:
        rngs = [rng_state()]
        if self.dist.get_size() > 1:
            rngs = self.dist.allgather(rngs[0])
        storage_id = ""
        if self.is_chief:
            state: dict[str, Any] = {
                "models_state_dict": [unwrap(m).state_dict() for m in self.context.models],
                "optimizers_state_dict": [o.state_dict() for o in self.context.optimizers],
                "lr_schedulers_state_dict": [s.state_dict() for s in self.context.lr_schedulers],
                "rng_state": rngs,
                "trainer_state": {
                    "trial_id": self.trial_id,
                    "batches_trained": self.batches_trained,
                    "epochs_trained": self.batches_trained // self.epoch_len,
                    "last_val": self.last_val,
                    "best_val": self.best_val,
                    "loader": self.stream.position(),
                },
                "callbacks": {name: cb.state_dict() for name, cb in self.named_callbacks.items()},
            }
            if self.context._scaler is not None:
                state["scaler_state_dict"] = self.context._scaler.state_dict()
            for callback in self.callbacks:
                callback.on_checkpoint_save_start(state)
            metadata = {
                "steps_completed": self.batches_trained,
                "framework": f"torch-{torch.__version__}",
                "format": "pickle",
            }
            with self.core.checkpoint.store_path(metadata) as (path, storage_id):
                torch.save(state, Path(path) / STATE_FILE)
                write_load_data(Path(path), self.trial, self.context)
                for callback in self.callbacks:
                    callback.on_checkpoint_end(str(path))
                    callback.on_checkpoint_write_end(str(path))
            logger.info("checkpoint %s at batch %d", storage_id, self.batches_trained)
        self.last_ckpt = self.batches_trained
        if self.dist.get_size() > 1:  # every worker's callbacks learn the id, as in Determined
            storage_id = self.dist.broadcast(storage_id)
        for callback in self.callbacks:
            callback.on_checkpoint_upload_end(uuid=storage_id)

    def _restore(self, storage_id: str) -> None:
        with self.core.checkpoint.restore_path(storage_id) as path:
            state = torch.load(Path(path) / STATE_FILE, map_location="cpu", weights_only=False)
        for callback in self.callbacks:
            callback.on_checkpoint_load_start(state)
        load_wrapped_states(state, self.context, storage_id)
        restore_scaler_and_callbacks(state, self.context._scaler, self.named_callbacks)
        ts = state["trainer_state"]
        if ts.get("trial_id") != self.trial_id:  # another trial's checkpoint: warm start at 0
            logger.info("warm start from checkpoint %s of trial %s", storage_id, ts["trial_id"])
            self.stream.seek(0, None)
            return
        self.batches_trained = int(ts["batches_trained"])
        self.last_val = int(ts["last_val"])
        self.last_ckpt = self.batches_trained
        self.best_val = ts.get("best_val")
        self.stream.seek(self.batches_trained, ts["loader"].get("epoch_rng"))
        rngs = state["rng_state"]
        rank = self.dist.get_rank()
        set_rng_state(rngs[rank] if rank < len(rngs) else rngs[0])
        logger.info("resumed from checkpoint %s at batch %d", storage_id, self.batches_trained)
