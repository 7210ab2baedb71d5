"""Which checkpoint (and model version) a trial used: Determined's TrialSourceInfo, reported by
a batch-inference or fine-tuning task (`core_context.experimental.report_task_using_checkpoint`)
so that the metrics it reports can be found from the checkpoint or the model version."""

from __future__ import annotations

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from controlplane.db.base import Base


class TrialSourceInfo(Base):
    __tablename__ = "trial_source_infos"
    __table_args__ = (
        Index("ix_trial_source_infos_model_id_model_version", "model_id", "model_version"),
    )

    # A trial reports each checkpoint it used once; a second report of the same pair updates it.
    trial_id: Mapped[int] = mapped_column(
        ForeignKey("trials.id", ondelete="CASCADE"), primary_key=True
    )
    checkpoint_uuid: Mapped[str] = mapped_column(
        ForeignKey("checkpoints.uuid", ondelete="CASCADE"), primary_key=True, index=True
    )
    source_type: Mapped[str] = mapped_column(String(64))  # TRIAL_SOURCE_INFO_TYPE_*
    model_id: Mapped[int | None] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"))
    model_version: Mapped[int | None]
