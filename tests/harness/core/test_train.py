"""TrainContext: what a report sends, bad input refused before sending, the background sender."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness._session import APIError
from harness.core import (
    DummyDistributedContext,
    DummyTrainContext,
    EarlyExitReason,
    TrainContext,
    _train,
)
from tests.harness.fakes import FakeTransport


def _ctx(fake: FakeTransport) -> TrainContext:
    return TrainContext(fake, 5, 3, 2, DummyDistributedContext())


def test_a_training_report_is_determined_s_body() -> None:
    fake = FakeTransport()
    ctx = _ctx(fake)
    ctx.report_training_metrics(10, {"loss": 0.5}, batch_metrics=[{"loss": 1}, {"loss": 0}])
    ctx.report_metrics("eval-extra_1", 10, {"f1": 0.9})
    ctx.close()
    assert {c.path for c in fake.calls} <= {
        "/api/v1/trials/5/metrics",
        "/api/v1/trials/5/metrics/batch",  # when the second report came within a second
    }
    assert fake.reports()[0] == {
        "group": "training",
        "metrics": {
            "trialId": 5,
            "trialRunId": 3,
            "stepsCompleted": 10,
            "reportTime": None,
            "metrics": {"avgMetrics": {"loss": 0.5}, "batchMetrics": [{"loss": 1}, {"loss": 0}]},
        },
    }
    assert fake.reports()[1]["group"] == "eval-extra_1"


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (-float("inf"), "-Infinity"),
        ([1.0, float("nan")], [1.0, "NaN"]),
        ({"a": float("inf")}, {"a": "Infinity"}),
        (3, 3),
        (True, True),
        ("text", "text"),
        (None, None),
    ],
)
def test_values_as_the_wire_carries_them(value: Any, sent: Any) -> None:
    assert _train.to_json_metrics({"m": value}) == {"m": sent}


class Scalar:
    """A numpy/torch-like scalar."""

    def __init__(self, v: float) -> None:
        self.v = v

    def item(self) -> float:
        return self.v

    def __float__(self) -> float:
        return self.v


def test_array_likes_become_numbers() -> None:
    assert _train.to_json_metrics({"s": Scalar(float("nan")), "x": Scalar(2.5)}) == {
        "s": "NaN",
        "x": 2.5,
    }


@pytest.mark.parametrize("bad", [object(), {1, 2}, Decimal("1.5"), b"raw", [object()]])
def test_a_value_that_is_not_json_is_a_type_error_naming_its_key(bad: Any) -> None:
    fake = FakeTransport()
    ctx = _ctx(fake)
    with pytest.raises(TypeError, match="training metric 'weird'"):
        ctx.report_training_metrics(1, {"ok": 1.0, "weird": bad})
    ctx.close()
    assert fake.calls == []  # nothing was sent


def test_validation_drops_bytes_and_refuses_none() -> None:
    fake = FakeTransport()
    ctx = _ctx(fake)
    ctx.report_validation_metrics(1, {"loss": 0.1, "image": b"\x89PNG"})
    with pytest.raises(RuntimeError, match="'acc'"):
        ctx.report_validation_metrics(2, {"acc": None})
    ctx.close()
    assert [c.body["metrics"]["metrics"]["avgMetrics"] for c in fake.calls] == [{"loss": 0.1}]


@pytest.mark.parametrize("group", ["a.b", "", "x" * 129, "nul\x00", "line\n", "tab\t", "\x7f"])
def test_a_group_the_master_refuses_is_refused_here(group: str) -> None:
    ctx = _ctx(FakeTransport())
    with pytest.raises(ValueError, match="metric group"):
        ctx.report_metrics(group, 1, {"a": 1})


# Determined's core_api/11_generic_metrics fixture reports to these groups (Determined refuses
# only an empty group and a '.').
GENERIC_GROUPS = ["group_b", "grou%p_c", "infer ence", "inf%er en/ce", "ünï", "x" * 128]


@pytest.mark.parametrize("group", GENERIC_GROUPS)
def test_any_group_determined_accepts_is_sent(group: str) -> None:
    fake = FakeTransport()
    ctx = _ctx(fake)
    name = f"z{group}/me.t r%i]\\c_0"
    ctx.report_metrics(group, 1, {name: 1.5})
    ctx.close()
    (sent,) = fake.reports()
    assert sent["group"] == group and sent["metrics"]["metrics"]["avgMetrics"] == {name: 1.5}


@pytest.mark.parametrize(
    ("steps", "error"), [(-1, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_bad_steps(steps: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="steps_completed"):
        _ctx(FakeTransport()).report_training_metrics(steps, {"a": 1})


def test_integer_likes_are_steps() -> None:
    class NumpyInt:
        def __index__(self) -> int:
            return 12

    fake = FakeTransport()
    ctx = _ctx(fake)
    ctx.report_training_metrics(NumpyInt(), {"a": 1})  # type: ignore[arg-type]
    ctx.close()
    assert fake.calls[0].body["metrics"]["stepsCompleted"] == 12


def test_a_report_over_the_master_s_limits_names_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTransport()
    ctx = _ctx(fake)
    monkeypatch.setattr(_train, "MAX_REPORT_BYTES", 1000)
    with pytest.raises(ValueError, match="limit of 1000 bytes"):
        ctx.report_training_metrics(1, {"blob": "x" * 2000})
    monkeypatch.setattr(_train, "MAX_METRIC_VALUES", 3)
    with pytest.raises(ValueError, match="at most 3"):
        ctx.report_training_metrics(1, {"a": 1}, batch_metrics=[{"a": 1}, {"a": 2}, {"a": 3}])
    ctx.close()
    assert fake.calls == []


@pytest.mark.parametrize("progress", [-0.1, 1.01, float("nan"), Scalar(2.0)])
def test_progress_out_of_range(progress: float) -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        _ctx(FakeTransport()).report_progress(progress)
    with pytest.raises(ValueError, match="between 0 and 1"):
        DummyTrainContext().report_progress(progress)


@pytest.mark.parametrize("progress", ["0.5", True, None, object()])
def test_progress_must_be_a_number(progress: Any) -> None:
    with pytest.raises(TypeError, match="progress must be a number"):
        _ctx(FakeTransport()).report_progress(progress)


def test_reports_never_wait_for_the_master_and_errors_surface_on_the_next_call() -> None:
    gate = threading.Event()
    answered: list[str] = []

    def handler(method: str, path: str, body: Any, params: Mapping[str, Any] | None) -> Any:
        gate.wait(5)
        answered.append(path)
        if any(r["metrics"]["stepsCompleted"] == 2 for r in body.get("reports", [body])):
            raise APIError(method, path, 500, "database is down")
        return {}

    ctx = _ctx(FakeTransport(handler))
    for step in (1, 2):
        ctx.report_training_metrics(step, {"loss": 1.0})  # returns while the master is stuck
    assert answered == []
    gate.set()
    with pytest.raises(APIError, match="database is down"):
        ctx._sender.flush()
    ctx.report_training_metrics(3, {"loss": 1.0})  # the error was raised once
    ctx.close()
    assert 2 <= len(answered) <= 3  # steps 1 and 2 alone or together, then 3


def test_close_drains_the_queue_in_order() -> None:
    fake = FakeTransport()
    ctx = _ctx(fake)
    for step in range(50):
        ctx.report_training_metrics(step, {"loss": float(step)})
    ctx.set_status("validating")
    ctx.report_progress(1.0)
    ctx.close()
    steps = [r["metrics"]["stepsCompleted"] for r in fake.reports()]
    assert steps == list(range(50))
    assert len(fake.to("/metrics")) < 5  # in a few batches, not one request each
    assert [c.path.rsplit("/", 1)[-1] for c in fake.calls[-2:]] == ["metadata", "progress"]
    assert fake.calls[-2].body == {"state": "validating"}


def test_best_validation_waits_for_reports_in_flight_and_404_is_none() -> None:
    order: list[str] = []

    def handler(method: str, path: str, body: Any, params: Mapping[str, Any] | None) -> Any:
        order.append(path)
        if "best_searcher" in path:
            if len(order) == 2:
                raise APIError(method, path, 404, "none yet")
            return {"metric": 0.25}
        return {}

    ctx = _ctx(FakeTransport(handler))
    ctx.report_validation_metrics(1, {"loss": 0.25})
    assert ctx.get_experiment_best_validation() is None
    assert order[0].endswith("/metrics")
    assert ctx.get_experiment_best_validation() == 0.25
    ctx.close()


def test_early_exit_twice_is_a_warning_not_an_error() -> None:
    calls = []

    def handler(method: str, path: str, body: Any, params: Mapping[str, Any] | None) -> Any:
        calls.append(body)
        if len(calls) > 1:
            raise APIError(method, path, 400, "already reported")
        return {}

    ctx = _ctx(FakeTransport(handler))
    ctx.report_early_exit(EarlyExitReason.INVALID_HP)
    ctx.report_early_exit(EarlyExitReason.USER_REQUESTED_STOP)
    assert calls[0] == {"reason": "EXITED_REASON_INVALID_HP"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_any_json_metric_is_sent_as_strict_json_and_keeps_finite_values(
    metrics: dict[str, Any],
) -> None:
    out = _train.to_json_metrics(metrics)
    text = json.dumps(out, allow_nan=False)  # no bare NaN/Infinity tokens
    assert set(json.loads(text)) == set(metrics)

    def same(a: Any, b: Any) -> bool:
        if isinstance(a, float) and not math.isfinite(a):
            return b in ("NaN", "Infinity", "-Infinity")
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        return bool(a == b)

    assert same(metrics, out)


def test_off_cluster_prints_and_appends_to_a_file(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m" / "metrics.jsonl"
    ctx = DummyTrainContext(metrics_file=path, clock=lambda: 7.0)
    ctx.report_training_metrics(3, {"loss": float("nan")})
    ctx.report_validation_metrics(3, {"loss": 0.5})
    ctx.set_status("done")
    with pytest.raises(TypeError, match="'bad'"):
        ctx.report_metrics("custom", 3, {"bad": object()})
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [
        {"time": 7.0, "group": "training", "steps_completed": 3, "metrics": {"loss": "NaN"}},
        {"time": 7.0, "group": "validation", "steps_completed": 3, "metrics": {"loss": 0.5}},
        {"time": 7.0, "status": "done"},
    ]
    out = capsys.readouterr().out
    assert "training metrics at step 3" in out and "status: done" in out
    assert ctx.get_experiment_best_validation() is None


_metric_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.booleans(),
    st.none(),
    st.text(max_size=80),
)


@settings(max_examples=200, deadline=None)
@given(
    metrics=st.dictionaries(st.text(min_size=1, max_size=130), _metric_values, max_size=20),
    limit=st.integers(min_value=200, max_value=40_000),
)
def test_the_fast_size_check_never_passes_a_report_over_the_limit(
    metrics: dict[str, Any], limit: int
) -> None:
    """Reports of plain scalars skip serialising on the training thread only when they surely
    fit; whatever it skips is under the limit once serialised."""
    avg = _train.to_json_metrics(metrics)
    body = {"group": "training", "metrics": {"metrics": {"avgMetrics": avg, "batchMetrics": None}}}
    original = _train.MAX_REPORT_BYTES
    try:
        _train.MAX_REPORT_BYTES = limit
        if _train._surely_small(body, len(avg)):
            assert len(json.dumps(body, separators=(",", ":"))) <= limit
    finally:
        _train.MAX_REPORT_BYTES = original
    assert avg == json.loads(json.dumps(avg))  # what is sent is JSON as it stands
