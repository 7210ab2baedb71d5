"""Deleting a workspace or project with its contents, as Determined 0.38 does: what may not be
deleted, and the next step of a deletion in progress.

Pure: a snapshot of the project's experiments in, a plan out. The master marks the
experiments' checkpoints for the checkpoint GC path, drops each experiment whose checkpoint
files are all gone, and drops the project when it holds nothing; a blocker or a checkpoint that
could not be deleted fails the deletion (DELETE_FAILED with the reason) instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class DeleteState(StrEnum):
    """Determined's v1WorkspaceState (shared by workspaces and projects); a row that finished
    deleting is gone, so DELETED is never stored."""

    UNSPECIFIED = "UNSPECIFIED"
    DELETING = "DELETING"
    DELETE_FAILED = "DELETE_FAILED"

    @property
    def wire(self) -> str:
        return f"WORKSPACE_STATE_{self.value}"


@dataclass(frozen=True)
class ExperimentFacts:
    id: int
    state: str  # RunState value
    terminal: bool
    # (model name, version) of each version registered from one of its checkpoints.
    registered: tuple[tuple[str, int], ...] = ()
    protected: tuple[str, ...] = ()  # uuids of its checkpoints a user protected
    live: tuple[str, ...] = ()  # uuids of its checkpoints that still have files
    marked: frozenset[str] = frozenset()  # of `live`, those already marked for deletion
    # uuid -> the last deletion error, for live checkpoints whose deletion failed
    failed: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DeletionPlan:
    mark: tuple[str, ...] = ()  # checkpoints to mark for deletion (the GC path deletes them)
    drop_experiments: tuple[int, ...] = ()  # nothing left in storage: remove their rows
    done: bool = False  # the project holds nothing more: remove it
    failure: str | None = None  # the deletion fails, with this reason


def blockers(experiments: list[ExperimentFacts]) -> list[str]:
    """Why these experiments may not be deleted (empty: they may)."""
    reasons = []
    for e in experiments:
        if not e.terminal:
            reasons.append(
                f"experiment {e.id} is {e.state}: only ended experiments are deleted "
                f"(det experiment kill {e.id}, or move it: det experiment move)"
            )
        if e.registered:
            versions = ", ".join(f"{name} version {v}" for name, v in e.registered[:3])
            reasons.append(
                f"experiment {e.id}'s checkpoints are registered as model versions "
                f"({versions}): delete those versions first, or move the experiment"
            )
        if e.protected:
            reasons.append(
                f"experiment {e.id} has protected checkpoints ({', '.join(e.protected[:3])}): "
                "unprotect them first"
            )
    return reasons


def plan_project_deletion(experiments: list[ExperimentFacts]) -> DeletionPlan:
    """The next step of deleting a project that holds these experiments."""
    reasons = blockers(experiments)
    if reasons:
        return DeletionPlan(failure="; ".join(reasons))
    failed = [(uuid, err) for e in experiments for uuid, err in sorted(e.failed.items())]
    if failed:
        uuid, err = failed[0]
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        return DeletionPlan(
            failure=f"checkpoint {uuid} could not be deleted{more}: {err}; "
            "delete the project again to retry"
        )
    mark = tuple(uuid for e in experiments for uuid in e.live if uuid not in e.marked)
    drop = tuple(e.id for e in experiments if not e.live)
    return DeletionPlan(
        mark=mark, drop_experiments=drop, done=len(drop) == len(experiments) and not mark
    )
