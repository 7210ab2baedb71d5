"""The GC plan: Determined's §5.5 rule as tables, and its invariants under hypothesis."""

from __future__ import annotations

import uuid as uuidlib
from collections import defaultdict
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.checkpoint_gc import (
    RETRY_MAX,
    CheckpointFacts,
    GcPolicy,
    KeepReason,
    ProtectReason,
    plan_gc,
    retry_delay,
)

K = KeepReason


def c(name: str, trial: int, steps: int, metric: float | None) -> CheckpointFacts:
    return CheckpointFacts(uuid=name, trial_id=trial, steps_completed=steps, metric=metric)


# Two trials of three checkpoints each; trial 1's best is at 200 (0.1), trial 2's at 100 (0.3).
TWO_TRIALS = [
    c("a1", 1, 100, 0.5),
    c("a2", 1, 200, 0.1),
    c("a3", 1, 300, 0.4),
    c("b1", 2, 100, 0.3),
    c("b2", 2, 200, 0.6),
    c("b3", 2, 300, None),
]


@pytest.mark.parametrize(
    ("policy", "protected", "deleted", "kept"),
    [
        pytest.param(
            GcPolicy(),
            {},
            {"a1", "b2"},
            {
                "a2": (K.TRIAL_BEST,),
                "a3": (K.TRIAL_LATEST,),
                "b1": (K.TRIAL_BEST,),
                "b3": (K.TRIAL_LATEST,),
            },
            id="defaults: trial best 1 and latest 1",
        ),
        pytest.param(
            GcPolicy(save_experiment_best=0, save_trial_best=0, save_trial_latest=0),
            {},
            {"a1", "a2", "a3", "b1", "b2", "b3"},
            {},
            id="all zero deletes everything",
        ),
        pytest.param(
            GcPolicy(save_experiment_best=1, save_trial_best=0, save_trial_latest=0),
            {},
            {"a1", "a3", "b1", "b2", "b3"},
            {"a2": (K.EXPERIMENT_BEST,)},
            id="experiment best only",
        ),
        pytest.param(
            GcPolicy(
                save_experiment_best=2,
                save_trial_best=0,
                save_trial_latest=0,
                smaller_is_better=False,
            ),
            {},
            {"a2", "a3", "b1", "b3"},
            {"b2": (K.EXPERIMENT_BEST,), "a1": (K.EXPERIMENT_BEST,)},
            id="larger is better ranks the other way",
        ),
        pytest.param(
            GcPolicy(save_experiment_best=0, save_trial_best=0, save_trial_latest=2),
            {},
            {"a1", "b1"},
            {
                "a2": (K.TRIAL_LATEST,),
                "a3": (K.TRIAL_LATEST,),
                "b2": (K.TRIAL_LATEST,),
                "b3": (K.TRIAL_LATEST,),
            },
            id="latest 2 per trial",
        ),
        pytest.param(
            GcPolicy(save_experiment_best=0, save_trial_best=5, save_trial_latest=0),
            {},
            {"b3"},
            {
                "a1": (K.TRIAL_BEST,),
                "a2": (K.TRIAL_BEST,),
                "a3": (K.TRIAL_BEST,),
                "b1": (K.TRIAL_BEST,),
                "b2": (K.TRIAL_BEST,),
            },
            id="no validation at its steps: never a best",
        ),
        pytest.param(
            GcPolicy(save_experiment_best=0, save_trial_best=0, save_trial_latest=0),
            {
                "a1": [ProtectReason.WARM_START],
                "b2": [ProtectReason.MODEL_REGISTRY],
                "b3": [ProtectReason.USER_PROTECTED, ProtectReason.WARM_START],
            },
            {"a2", "a3", "b1"},
            {
                "a1": (K.WARM_START,),
                "b2": (K.MODEL_REGISTRY,),
                "b3": (K.WARM_START, K.USER_PROTECTED),
            },
            id="protected ones are kept whatever the policy",
        ),
        pytest.param(
            GcPolicy(save_experiment_best=1, save_trial_best=1, save_trial_latest=1),
            {},
            {"a1", "b2"},
            {
                "a2": (K.EXPERIMENT_BEST, K.TRIAL_BEST),
                "a3": (K.TRIAL_LATEST,),
                "b1": (K.TRIAL_BEST,),
                "b3": (K.TRIAL_LATEST,),
            },
            id="every reason is listed",
        ),
    ],
)
def test_plan_table(
    policy: GcPolicy,
    protected: dict[str, list[ProtectReason]],
    deleted: set[str],
    kept: dict[str, tuple[KeepReason, ...]],
) -> None:
    plan = plan_gc(TWO_TRIALS, policy, protected)
    assert set(plan.delete) == deleted
    assert dict(plan.keep) == kept


def test_ties_keep_the_later_checkpoint_and_the_plan_is_deterministic() -> None:
    ckpts = [c("x", 1, 100, 0.2), c("y", 1, 200, 0.2), c("z", 1, 300, 0.9)]
    policy = GcPolicy(save_experiment_best=0, save_trial_best=1, save_trial_latest=0)
    assert plan_gc(ckpts, policy, {}).delete == ("x", "z")
    assert plan_gc(list(reversed(ckpts)), policy, {}) == plan_gc(ckpts, policy, {})


def test_nan_metric_ranks_nowhere() -> None:
    ckpts = [c("x", 1, 100, float("nan")), c("y", 1, 200, 0.5)]
    policy = GcPolicy(save_experiment_best=0, save_trial_best=1, save_trial_latest=0)
    assert plan_gc(ckpts, policy, {}).delete == ("x",)


@pytest.mark.parametrize(
    "config",
    [
        {"checkpoint_storage": {"save_trial_best": -1}},
        {"checkpoint_storage": {"save_trial_latest": "1"}},
        {"checkpoint_storage": {"save_experiment_best": True}},
    ],
)
def test_policy_rejects_bad_counts(config: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"checkpoint_storage\.save_"):
        GcPolicy.from_config(config)


def test_policy_from_config_defaults_and_direction() -> None:
    assert GcPolicy.from_config({}) == GcPolicy()
    got = GcPolicy.from_config(
        {
            "checkpoint_storage": {
                "type": "shared_fs",
                "save_trial_best": 3,
                "save_trial_latest": None,
            },
            "searcher": {"smaller_is_better": False},
        }
    )
    assert got == GcPolicy(0, 3, 1, smaller_is_better=False)


@pytest.mark.parametrize(
    ("failures", "delay"),
    [(0, 30), (1, 30), (2, 60), (3, 120), (7, 1920), (8, 3600), (10_000, 3600)],
)
def test_retry_delay(failures: int, delay: int) -> None:
    assert retry_delay(failures) == timedelta(seconds=delay)
    assert retry_delay(failures) <= RETRY_MAX


metrics = st.one_of(st.none(), st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
facts = st.lists(
    st.tuples(st.integers(1, 4), st.integers(0, 50), metrics), min_size=0, max_size=30
).map(
    lambda rows: [
        CheckpointFacts(str(uuidlib.UUID(int=i)), trial, steps, metric)
        for i, (trial, steps, metric) in enumerate(rows)
    ]
)
policies = st.builds(
    GcPolicy, st.integers(0, 5), st.integers(0, 5), st.integers(0, 5), st.booleans()
)


@given(facts, policies, st.data())
def test_invariants(ckpts: list[CheckpointFacts], policy: GcPolicy, data: st.DataObject) -> None:
    uuids = [x.uuid for x in ckpts]
    protected = (
        {
            u: data.draw(st.lists(st.sampled_from(list(ProtectReason)), min_size=1, max_size=3))
            for u in data.draw(st.lists(st.sampled_from(uuids), unique=True))
            if uuids
        }
        if uuids
        else {}
    )
    plan = plan_gc(ckpts, policy, protected)
    deleted = set(plan.delete)
    # Every checkpoint is decided exactly once, and every kept one says why.
    assert len(plan.delete) == len(deleted)
    assert deleted.isdisjoint(plan.keep) and deleted | set(plan.keep) == set(uuids)
    assert all(plan.keep[u] for u in plan.keep)
    # Never a protected one.
    assert deleted.isdisjoint(protected)
    by_trial: dict[int, list[CheckpointFacts]] = defaultdict(list)
    for x in ckpts:
        by_trial[x.trial_id].append(x)
    for trial_ckpts in by_trial.values():
        # The trial's latest save_trial_latest all survive, exactly that many carry the reason.
        latest = sorted(trial_ckpts, key=lambda x: (-x.steps_completed, x.uuid))
        latest = latest[: policy.save_trial_latest]
        assert deleted.isdisjoint(x.uuid for x in latest)
        marked = [x for x in trial_ckpts if K.TRIAL_LATEST in plan.keep.get(x.uuid, ())]
        assert len(marked) == min(policy.save_trial_latest, len(trial_ckpts))
        ranked = [x for x in trial_ckpts if x.metric is not None]
        marked = [x for x in trial_ckpts if K.TRIAL_BEST in plan.keep.get(x.uuid, ())]
        assert len(marked) == min(policy.save_trial_best, len(ranked))
        # A trial-best is never worse than a ranked checkpoint left out of the trial's best.
        sign = 1 if policy.smaller_is_better else -1
        if marked:
            worst_kept = max(sign * x.metric for x in marked)  # type: ignore[operator]
            for x in ranked:
                if x not in marked:
                    assert sign * x.metric >= worst_kept  # type: ignore[operator]
    ranked = [x for x in ckpts if x.metric is not None]
    marked = [x for x in ckpts if K.EXPERIMENT_BEST in plan.keep.get(x.uuid, ())]
    assert len(marked) == min(policy.save_experiment_best, len(ranked))
    # Anything deleted has no policy reason at all: recomputing with no protection keeps
    # nothing that was deleted.
    again = plan_gc(ckpts, policy, {})
    assert deleted <= set(again.delete)
