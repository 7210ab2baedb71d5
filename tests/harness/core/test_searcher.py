"""SearcherContext in Determined 0.38's form: one op of searcher.max_length, nothing sent."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from harness.core import (
    DummyDistributedContext,
    DummySearcherContext,
    SearcherContext,
    SearcherContextMissing,
    SearcherMode,
    TrainContext,
    Unit,
)
from harness.core._searcher import max_length_of
from tests.harness.core.dists import Group
from tests.harness.fakes import FakeTransport


@pytest.mark.parametrize(
    ("searcher", "expected"),
    [
        ({}, None),
        ({"max_length": 10}, (10, None)),
        ({"max_length": {"batches": 7}}, (7, Unit.BATCHES)),
        ({"max_length": {"epochs": 2}}, (2, Unit.EPOCHS)),
        ({"max_length": {"records": 640}}, (640, Unit.RECORDS)),
        ({"max_length": 5, "unit": "epochs"}, (5, Unit.EPOCHS)),
        ({"max_length": {}}, None),
    ],
)
def test_max_length_and_units(searcher: dict[str, Any], expected: Any) -> None:
    assert max_length_of({"searcher": searcher}) == expected


@pytest.mark.parametrize("bad", ["10", 1.5, True, {"batches": "x"}])
def test_a_bad_max_length_is_named(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"searcher\.max_length"):
        max_length_of({"searcher": {"max_length": bad}})


def _train(fake: FakeTransport) -> TrainContext:
    return TrainContext(fake, 5, 1, 2, DummyDistributedContext())


def test_one_op_progress_sent_completion_not() -> None:
    fake = FakeTransport()
    train = _train(fake)
    ctx = SearcherContext(train, DummyDistributedContext(), 100, Unit.BATCHES)
    with pytest.warns(FutureWarning, match="deprecated in Determined 0.38.0"):
        ops = []
        for op in ctx.operations():
            ops.append(op.length)
            op.report_progress(50)
            op.report_progress(250)  # clamped
            op.report_completed(0.5)
            with pytest.raises(RuntimeError, match=r"only call op\.report_completed"):
                op.report_completed(0.5)
            with pytest.raises(RuntimeError, match=r"after op\.report_completed"):
                op.report_progress(10)
    train.close()
    ctx.acknowledge_out_of_ops()
    assert ops == [100] and ctx.get_configured_units() is Unit.BATCHES
    assert [c.body["progress"] for c in fake.calls] == [0.5, 1.0]
    assert all("/progress" in c.path for c in fake.calls)  # report_completed sends nothing


def test_an_op_left_incomplete_is_an_error() -> None:
    ctx = SearcherContext(None, DummyDistributedContext(), 3)
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="report_completed"):
        for _ in ctx.operations():
            pass


def test_workers_follow_the_chief() -> None:
    group = Group(3)
    seen: dict[int, list[int]] = {}

    def run(rank: int) -> None:
        ctx = SearcherContext(None, group.rank(rank), 42)
        lengths = []
        for op in ctx._operations(SearcherMode.WorkersAskChief):
            lengths.append(op.length)
            if rank == 0:
                op.report_completed(1.0)
            else:
                with pytest.raises(RuntimeError, match="chief"):
                    op.report_completed(1.0)
        seen[rank] = lengths

    threads = [threading.Thread(target=run, args=(r,)) for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {0: [42], 1: [42], 2: [42]}


def test_chief_only_refuses_workers() -> None:
    group = Group(2)
    chief = SearcherContext(None, group.rank(0), 4)
    ops = chief._operations(SearcherMode.ChiefOnly)
    next(ops).report_completed(0.0)
    assert list(ops) == [] and group.broadcasts == 0
    worker = SearcherContext(None, group.rank(1), 4)
    with pytest.raises(RuntimeError, match="ChiefOnly"):
        next(worker._operations(SearcherMode.ChiefOnly))
    assert SearcherMode.ChiefOnly.value == "CHEIF_ONLY"  # Determined's spelling


def test_off_cluster_one_op_of_length_1_and_missing_explains() -> None:
    ctx = DummySearcherContext(DummyDistributedContext())
    with pytest.warns(FutureWarning):
        for op in ctx.operations():
            assert op.length == 1
            op.report_progress(1)
            op.report_completed(0.1)
    assert ctx.get_configured_units() is Unit.EPOCHS
    missing = SearcherContextMissing()
    for call in (lambda: next(iter(missing.operations())), missing.acknowledge_out_of_ops):
        with pytest.raises(ValueError, match=r"searcher\.max_length"):
            call()
