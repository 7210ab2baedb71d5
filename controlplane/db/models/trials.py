"""Trials."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base


class Trial(Base):
    __tablename__ = "trials"
    __table_args__ = (
        Index("ix_trials_experiment_id_id", "experiment_id", "id"),
        Index("ix_trials_state", "state"),
        # The searcher names its trials: a request is materialised once, whatever replays it.
        UniqueConstraint("experiment_id", "request_id"),
        # The experiment list's best trial per experiment (sort by the searcher's metric).
        Index("ix_trials_experiment_metric", "experiment_id", "searcher_metric_value"),
        # A detached run names its trial within its experiment (PUT /api/v1/trials).
        UniqueConstraint("experiment_id", "external_trial_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"))
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.task_id"), unique=True)
    request_id: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(32))
    hparams: Mapped[dict[str, Any]]
    seed: Mapped[int]
    restarts: Mapped[int] = mapped_column(default=0)
    run_id: Mapped[int] = mapped_column(default=0)
    total_batches: Mapped[int] = mapped_column(default=0)
    runner_state: Mapped[str] = mapped_column(String(255), default="")
    early_exit_reason: Mapped[str | None] = mapped_column(String(64))
    progress: Mapped[float | None]
    searcher_metric_value: Mapped[float | None]
    # The best searcher metric of its validations (smaller_is_better honoured).
    best_searcher_metric: Mapped[float | None]
    # The searcher paused it (ASHA promotions): activating the experiment does not resume it.
    paused_by_searcher: Mapped[bool] = mapped_column(default=False, server_default=false())
    start_time: Mapped[datetime]
    end_time: Mapped[datetime | None]
    # What the Core API's set_metadata merged in (POST /runs/{id}/metadata); None = never set.
    run_metadata: Mapped[dict[str, Any] | None]
    # A detached run's own name for it, and its latest heartbeat (PATCH /api/v1/trials/{id}):
    # one silent for LOST_AFTER ends in ERROR (services/unmanaged.py).
    external_trial_id: Mapped[str | None] = mapped_column(String(255))
    last_activity: Mapped[datetime | None]


class TrialHparam(Base):
    """One sampled hyperparameter of a trial (domain.hparam_values), written with the trial: the
    experiment list's `hp.<name>` filter reads this index instead of every trial's JSON."""

    __tablename__ = "trial_hparams"
    __table_args__ = (Index("ix_trial_hparams_name_number", "name", "number", "experiment_id"),)

    trial_id: Mapped[int] = mapped_column(
        ForeignKey("trials.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"))
    number: Mapped[float | None]
    text: Mapped[str] = mapped_column(Text)
