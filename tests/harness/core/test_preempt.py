"""PreemptContext: the watcher's calls (§7.3), the three modes across ranks, auto-ack."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from harness._session import APIError, MasterUnreachable
from harness.core import (
    DummyDistributedContext,
    DummyPreemptContext,
    PreemptContext,
    PreemptMode,
    _preempt,
)
from tests.harness.core.dists import Group
from tests.harness.fakes import FakeTransport

ALLOC = "trial-5.1"


class Master:
    """Preemption endpoint: answers from a script; a long poll ends when ``preempt`` is set."""

    def __init__(self, first: list[Any] | None = None) -> None:
        self.script = list(first or [])
        self.preempt = threading.Event()
        self.timeouts: list[int] = []
        self.acks = 0

    def __call__(self, method: str, path: str, body: Any, params: Mapping[str, Any] | None) -> Any:
        if path.endswith("/ack_preemption"):
            self.acks += 1
            return {}
        self.timeouts.append(int((params or {})["timeout_seconds"]))
        if self.script:
            answer = self.script.pop(0)
            if isinstance(answer, BaseException):
                raise answer
            return answer
        if self.timeouts[-1] > 0:
            self.preempt.wait(2)
        return {"preempt": self.preempt.is_set()}


def wait_true(check: Any, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not true in time"
        time.sleep(0.005)


def test_first_call_is_immediate_then_long_polls_of_60_s() -> None:
    master = Master()
    ctx = PreemptContext(FakeTransport(master), ALLOC, DummyDistributedContext()).start()
    try:
        assert ctx.should_preempt() is False
        wait_true(lambda: len(master.timeouts) >= 2)
        assert master.timeouts[:2] == [0, 60]
        master.preempt.set()
        wait_true(lambda: ctx.should_preempt())
        assert master.acks == 1
        assert ctx.should_preempt() is True and master.acks == 1  # acknowledged once
    finally:
        ctx.close()


@pytest.mark.parametrize(
    ("error", "waits"),
    [
        (MasterUnreachable("refused"), [_preempt.RETRY_AFTER_S]),
        (APIError("GET", "/x", 500, "boom"), [_preempt.RETRY_AFTER_S]),
        ({"no": "preempt key"}, [_preempt.RETRY_AFTER_S]),
        # A read timeout is retried at once, without the 10 s pause.
        (MasterUnreachable("t"), []),
    ],
    ids=["unreachable", "500", "bad-answer", "timeout"],
)
def test_failed_polls_are_retried(error: Any, waits: list[float]) -> None:
    if waits == []:
        error.__cause__ = urllib.error.URLError(TimeoutError("timed out"))
    master = Master(first=[{"preempt": False}, error, {"preempt": True}])
    slept: list[float] = []
    watcher = _preempt._Watcher(FakeTransport(master), ALLOC, lambda s: bool(slept.append(s)))
    watcher.run()  # in this thread: ends once preempted
    assert watcher.preempted.is_set() and slept == waits
    assert master.timeouts == [0, 60, 60]


def test_a_failed_first_call_counts_as_not_preempted() -> None:
    master = Master(first=[MasterUnreachable("restarting")])
    stop = threading.Event()
    watcher = _preempt._Watcher(FakeTransport(master), ALLOC, stop.wait)
    watcher.start()
    assert watcher.answered.wait(2) and not watcher.preempted.is_set()
    stop.set()


def test_auto_ack_false_leaves_the_ack_to_the_user() -> None:
    master = Master(first=[{"preempt": True}])
    ctx = PreemptContext(FakeTransport(master), ALLOC, DummyDistributedContext()).start()
    assert ctx.should_preempt(auto_ack=False) is True and master.acks == 0
    ctx.acknowledge_preemption_signal()
    assert master.acks == 1
    ctx.close()


def test_should_preempt_before_start_and_double_start_are_errors() -> None:
    ctx = PreemptContext(FakeTransport(Master()), ALLOC, DummyDistributedContext())
    with pytest.raises(RuntimeError, match=r"before PreemptContext\.start"):
        ctx.should_preempt()
    ctx.start()
    with pytest.raises(RuntimeError, match="multiple times"):
        ctx.start()
    ctx.close()


def _ranks(mode: PreemptMode, size: int, master: Master) -> list[PreemptContext]:
    group = Group(size)
    fake = FakeTransport(master)
    return [PreemptContext(fake, ALLOC, group.rank(r), mode).start() for r in range(size)]


def _in_step(ctxs: list[PreemptContext]) -> list[bool]:
    """Every rank calls should_preempt() at once, as user code does in WorkersAskChief."""
    out: list[Any] = [None] * len(ctxs)

    def call(i: int) -> None:
        out[i] = ctxs[i].should_preempt()

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(ctxs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return out


def test_workers_ask_chief_one_watcher_and_the_chief_s_answer_everywhere() -> None:
    master = Master(first=[{"preempt": True}])
    ctxs = _ranks(PreemptMode.WorkersAskChief, 3, master)
    assert [c._watcher is not None for c in ctxs] == [True, False, False]
    assert _in_step(ctxs) == [True, True, True]
    assert master.acks == 1 and master.timeouts == [0]  # only the chief asked
    for c in ctxs:
        c.close()


def test_workers_ask_master_each_rank_watches_and_acks() -> None:
    master = Master()
    master.preempt.set()
    ctxs = _ranks(PreemptMode.WorkersAskMaster, 2, master)
    assert all(c._watcher is not None for c in ctxs)
    assert [c.should_preempt() for c in ctxs] == [True, True]  # no broadcast: no lockstep
    assert master.acks == 2
    for c in ctxs:
        c.close()


def test_chief_only_refuses_workers() -> None:
    master = Master(first=[{"preempt": False}])
    chief, worker = _ranks(PreemptMode.ChiefOnly, 2, master)
    assert chief.should_preempt() is False  # no broadcast: the worker is not waited for
    with pytest.raises(RuntimeError, match="ChiefOnly"):
        worker.should_preempt()
    chief.close()


@pytest.mark.parametrize("mode", list(PreemptMode))
def test_off_cluster_never_preempted_but_keeps_the_calling_pattern(mode: PreemptMode) -> None:
    group = Group(2)
    ctxs = [DummyPreemptContext(group.rank(r), mode).start() for r in range(2)]
    if mode is PreemptMode.ChiefOnly:
        assert ctxs[0].should_preempt() is False
        with pytest.raises(RuntimeError):
            ctxs[1].should_preempt()
    else:
        assert _in_step(ctxs) == [False, False]
    assert group.broadcasts == (1 if mode is PreemptMode.WorkersAskChief else 0)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["WORKERS_ASK_CHIEF", "WORKERS_ASK_MASTER"])
def test_real_collectives_across_processes(mode: str) -> None:
    """WorkersAskChief: all ranks see the preemption at the same call, one ack in all.
    WorkersAskMaster: each rank watches and acknowledges for itself."""
    pytest.importorskip("torch")
    worker = Path(__file__).with_name("preempt_worker.py")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    procs = [
        subprocess.Popen(
            [sys.executable, str(worker), mode],
            env={
                **os.environ,
                "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
                "RANK": str(rank),
                "WORLD_SIZE": "2",
                "STORE_PORT": port,
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(2)
    ]
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-3000:]
            line = next(x for x in out.splitlines() if x.startswith("RESULT "))
            results.append(json.loads(line[len("RESULT ") :]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert all(r["seen_at"] is not None for r in results)
    if mode == "WORKERS_ASK_CHIEF":
        assert results[0]["seen_at"] == results[1]["seen_at"]
        assert [r["acks"] for r in results] == [1, 0]
    else:
        assert [r["acks"] for r in results] == [1, 1]
