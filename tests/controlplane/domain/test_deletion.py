"""The next step of deleting a project, from the facts of its experiments (table tests)."""

from __future__ import annotations

import pytest

from controlplane.domain.deletion import (
    DeleteState,
    DeletionPlan,
    ExperimentFacts,
    plan_project_deletion,
)


def ended(exp_id: int, **kw: object) -> ExperimentFacts:
    return ExperimentFacts(id=exp_id, state="CANCELED", terminal=True, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("experiments", "plan"),
    [
        pytest.param([], DeletionPlan(done=True), id="empty project: remove it"),
        pytest.param(
            [ended(1, live=("a", "b")), ended(2)],
            DeletionPlan(mark=("a", "b"), drop_experiments=(2,)),
            id="mark files, drop what has none",
        ),
        pytest.param(
            [ended(1, live=("a",), marked=frozenset({"a"}))],
            DeletionPlan(),
            id="already marked: wait for the GC path",
        ),
        pytest.param(
            [ended(1), ended(2)],
            DeletionPlan(drop_experiments=(1, 2), done=True),
            id="all files gone: drop all and the project",
        ),
    ],
)
def test_plan(experiments: list[ExperimentFacts], plan: DeletionPlan) -> None:
    assert plan_project_deletion(experiments) == plan


@pytest.mark.parametrize(
    ("facts", "reason"),
    [
        pytest.param(
            ExperimentFacts(id=3, state="ACTIVE", terminal=False),
            "experiment 3 is ACTIVE: only ended experiments are deleted",
            id="running",
        ),
        pytest.param(
            ended(4, live=("c",), registered=(("m", 2),)),
            "experiment 4's checkpoints are registered as model versions (m version 2)",
            id="registered",
        ),
        pytest.param(
            ended(5, live=("d",), protected=("d",)),
            "experiment 5 has protected checkpoints (d)",
            id="protected",
        ),
        pytest.param(
            ended(6, live=("e", "f"), marked=frozenset({"e", "f"}), failed={"f": "io", "e": "x"}),
            "checkpoint e could not be deleted (and 1 more): x",
            id="a failed deletion",
        ),
    ],
)
def test_failures_name_the_reason_and_change_nothing(facts: ExperimentFacts, reason: str) -> None:
    plan = plan_project_deletion([ended(1, live=("z",)), facts])
    assert plan.failure is not None and reason in plan.failure
    assert (plan.mark, plan.drop_experiments, plan.done) == ((), (), False)


def test_wire_names_are_determineds() -> None:
    assert [s.wire for s in DeleteState] == [
        "WORKSPACE_STATE_UNSPECIFIED",
        "WORKSPACE_STATE_DELETING",
        "WORKSPACE_STATE_DELETE_FAILED",
    ]
