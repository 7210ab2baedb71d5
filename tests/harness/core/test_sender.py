"""The reporting thread: batches of metric reports, order kept, a refused batch loses one report."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness._session import APIError
from harness.core import _sender
from harness.core._sender import Report, Sender
from tests.harness.fakes import FakeTransport


def _report(steps: int, group: str = "training", size: int = 100) -> Report:
    body = {
        "group": group,
        "metrics": {
            "trialId": 5,
            "trialRunId": 1,
            "stepsCompleted": steps,
            "reportTime": None,
            "metrics": {"avgMetrics": {"loss": 1.0}, "batchMetrics": None},
        },
    }
    return Report(5, body, size)


def _steps(fake: FakeTransport) -> list[int]:
    return [r["metrics"]["stepsCompleted"] for r in fake.reports()]


def _wait_for(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_the_first_report_goes_at_once_and_the_next_ones_wait_for_the_interval() -> None:
    fake = FakeTransport()
    sender = Sender(fake, batch_interval_s=60.0, clock=lambda: 1000.0)
    sender.submit_report(_report(1))
    _wait_for(lambda: len(fake.calls) == 1)
    for steps in (2, 3, 4):
        sender.submit_report(_report(steps))
    time.sleep(0.05)
    assert len(fake.calls) == 1  # waiting: the interval has not passed
    sender.flush()
    assert [c.path for c in fake.calls] == [
        "/api/v1/trials/5/metrics",
        "/api/v1/trials/5/metrics/batch",
    ]
    assert _steps(fake) == [1, 2, 3, 4]
    sender.close()


def test_waiting_reports_go_out_when_the_interval_has_passed_without_another_call() -> None:
    fake = FakeTransport()
    sender = Sender(fake, batch_interval_s=0.05)
    for steps in range(5):
        sender.submit_report(_report(steps))
    _wait_for(lambda: _steps(fake) == list(range(5)))
    assert len(fake.calls) <= 2  # the first alone (unless the thread was slower), then the rest
    sender.close()


def test_a_report_within_the_interval_does_not_wake_the_thread() -> None:
    fake = FakeTransport()
    sender = Sender(fake, batch_interval_s=60.0, clock=lambda: 1000.0)
    sender.submit_report(_report(1))
    sender.flush()
    sender.submit_report(_report(2))
    assert sender._due is False  # waits for the interval; the thread sleeps on
    sender.submit_report(_report(3, "validation"))
    assert sender._due is True or len(fake.calls) == 2  # due (or already taken and sent)
    sender.close()
    assert _steps(fake) == [1, 2, 3]


def test_a_validation_report_goes_at_once_with_the_waiting_ones() -> None:
    fake = FakeTransport()
    sender = Sender(fake, batch_interval_s=60.0, clock=lambda: 1000.0)
    sender.submit_report(_report(1))
    sender.submit_report(_report(2))
    sender.submit_report(_report(2, "validation"))
    _wait_for(lambda: len(fake.reports()) == 3)  # no flush: the validation report was due
    assert [(r["group"], r["metrics"]["stepsCompleted"]) for r in fake.reports()] == [
        ("training", 1),
        ("training", 2),
        ("validation", 2),
    ]
    sender.close()


def test_another_call_sends_the_reports_queued_before_it_first() -> None:
    fake = FakeTransport()
    sender = Sender(fake, batch_interval_s=60.0, clock=lambda: 1000.0)
    sender.submit_report(_report(1))
    sender.flush()
    for steps in (2, 3):
        sender.submit_report(_report(steps))
    sender.submit(lambda: fake.request("POST", "/api/v1/trials/5/progress", body={}))
    sender.submit_report(_report(4))
    sender.close()
    assert [c.path.rsplit("/", 1)[-1] for c in fake.calls] == [
        "metrics",
        "batch",
        "progress",
        "metrics",
    ]
    assert _steps(fake) == [1, 2, 3, 4]


def test_a_batch_is_sent_before_it_passes_the_master_s_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_sender, "MAX_BATCH_REPORTS", 3)
    monkeypatch.setattr(_sender, "MAX_BATCH_BYTES", 1000)
    fake = FakeTransport()
    sender = Sender(fake, batch_interval_s=60.0, clock=lambda: 1000.0)
    sizes = {steps: 100 for steps in range(12)} | {8: 901, 9: 50}
    for steps, size in sizes.items():
        sender.submit_report(_report(steps, size=size))
    sender.close()
    assert _steps(fake) == list(range(12))
    for call in fake.calls:
        reports = call.body.get("reports", [call.body])
        steps = [r["metrics"]["stepsCompleted"] for r in reports]
        assert len(steps) <= 3 and sum(sizes[s] for s in steps) <= 1000, steps
    assert len(fake.calls) >= 5  # 12 reports of at most 3 a batch, 8 with no neighbour


def test_a_refused_batch_is_sent_one_report_at_a_time_and_loses_only_the_bad_one() -> None:
    def handler(method: str, path: str, body: Any, params: Mapping[str, Any] | None) -> Any:
        if path.endswith("/batch"):
            raise APIError(method, path, 400, "reports[1]: invalid metric group")
        if body["metrics"]["stepsCompleted"] == 2:
            raise APIError(method, path, 400, "invalid metric group")
        return {}

    fake = FakeTransport(handler)
    sender = Sender(fake, batch_interval_s=60.0, clock=lambda: 1000.0)
    sender.submit_report(_report(0))
    for steps in (1, 2, 3):
        sender.submit_report(_report(steps))
    with pytest.raises(APIError, match="invalid metric group"):
        sender.flush()
    singles = [
        c.body["metrics"]["stepsCompleted"] for c in fake.to("/metrics") if "/batch" not in c.path
    ]
    assert singles == [0, 1, 2, 3]  # 1 and 3 stored, 2 refused alone
    sender.flush()  # the error was raised once
    sender.close()


def test_a_report_too_large_alone_names_the_limit() -> None:
    def handler(method: str, path: str, body: Any, params: Mapping[str, Any] | None) -> Any:
        raise APIError(method, path, 413, "request entity too large")

    sender = Sender(FakeTransport(handler))
    sender.submit_report(_report(7))
    with pytest.raises(APIError, match=r"training metrics report at step 7 .*max_request_body"):
        sender.flush()
    sender.close()


def test_an_unreachable_master_is_not_retried_report_by_report() -> None:
    def handler(method: str, path: str, body: Any, params: Mapping[str, Any] | None) -> Any:
        raise APIError(method, path, 500, "database is down")

    fake = FakeTransport(handler)
    sender = Sender(fake, batch_interval_s=60.0, clock=lambda: 1000.0)
    sender.submit_report(_report(0))
    with pytest.raises(APIError, match="database is down"):
        sender.flush()
    sender.submit_report(_report(1))
    sender.submit_report(_report(2))
    with pytest.raises(APIError, match="database is down"):
        sender.flush()
    assert [c.path.rsplit("/", 1)[-1] for c in fake.calls] == ["metrics", "batch"]
    sender.close()


def test_a_caller_waits_for_room_while_the_master_is_stuck(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_sender, "QUEUE_SIZE", 5)
    gate = threading.Event()

    def handler(method: str, path: str, body: Any, params: Mapping[str, Any] | None) -> Any:
        gate.wait(10)
        return {}

    fake = FakeTransport(handler)
    sender = Sender(fake, batch_interval_s=60.0, clock=lambda: 1000.0)
    submitted: list[int] = []

    def training() -> None:
        for steps in range(20):
            sender.submit_report(_report(steps))
            submitted.append(steps)

    caller = threading.Thread(target=training)
    caller.start()
    _wait_for(lambda: len(submitted) >= 6)
    time.sleep(0.1)
    stalled = len(submitted)
    time.sleep(0.1)
    # At most one batch in flight and five queued: the caller waits for room.
    assert len(submitted) == stalled <= 10
    gate.set()
    caller.join(10)
    sender.close()
    assert _steps(fake) == list(range(20))


def test_flush_and_close_without_a_thread_do_nothing() -> None:
    sender = Sender(FakeTransport())
    sender.flush()
    sender.close()


# One step of a caller: a report (True: validation), a call, or a flush.
_ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("report"), st.booleans()),
        st.tuples(st.just("call"), st.none()),
        st.tuples(st.just("flush"), st.none()),
        st.tuples(st.just("tick"), st.floats(0, 2)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(actions=_ACTIONS, interval=st.sampled_from([0.0, 0.5, 60.0]))
def test_the_master_sees_everything_once_and_in_the_order_it_was_reported(
    actions: list[tuple[str, Any]], interval: float
) -> None:
    now = [0.0]
    lock = threading.Lock()
    fake = FakeTransport()
    sender = Sender(fake, batch_interval_s=interval, clock=lambda: now[0])
    expected: list[str] = []
    for n, (kind, arg) in enumerate(actions):
        if kind == "report":
            sender.submit_report(_report(n, "validation" if arg else "training"))
            expected.append(f"report {n}")
        elif kind == "call":
            path = f"/api/v1/trials/5/call/{n}"
            sender.submit(lambda path=path: fake.request("POST", path, body={}))
            expected.append(f"call {n}")
        elif kind == "flush":
            sender.flush()
        else:
            with lock:
                now[0] += arg
    sender.close()
    seen: list[str] = []
    for c in fake.calls:
        if "/call/" in c.path:
            seen.append(f"call {c.path.rsplit('/', 1)[-1]}")
        else:
            bodies = c.body["reports"] if c.path.endswith("/batch") else [c.body]
            assert 1 <= len(bodies) <= _sender.MAX_BATCH_REPORTS
            seen += [f"report {b['metrics']['stepsCompleted']}" for b in bodies]
    assert seen == expected
