"""The idle decision and the interactive config keys: tables, plus properties."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.errors import InvalidArgument
from controlplane.domain.interactive import (
    Activity,
    IdleFacts,
    IdlePlan,
    IdleSnapshot,
    IdleType,
    JupyterState,
    Kind,
    decide_idle,
    idle_verdict,
    parse_idle_type,
    parse_timeout,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
K_OR_T, CONNS, ACTIVITY = (
    IdleType.KERNELS_OR_TERMINALS,
    IdleType.KERNEL_CONNECTIONS,
    IdleType.ACTIVITY,
)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(None, None), ("30s", 30), ("30m", 1800), ("1h", 3600), ("2d", 172800), (90, 90),
     ("1.5m", 90), ("500ms", 0.5), (" 10 s ", 10)],
)  # fmt: skip
def test_timeouts(value: object, seconds: float | None) -> None:
    assert parse_timeout(value, "idle_timeout") == seconds


@pytest.mark.parametrize("value", ["", "soon", "10x", "-5m", 0, -1, True, [1], {"a": 1}, "400d"])
def test_bad_timeouts_name_the_key(value: object) -> None:
    with pytest.raises(InvalidArgument, match="idle_timeout"):
        parse_timeout(value, "idle_timeout")


def test_idle_types() -> None:
    assert parse_idle_type(None) is K_OR_T
    assert parse_idle_type("activity") is ACTIVITY
    with pytest.raises(InvalidArgument, match="kernels_or_terminals, kernel_connections"):
        parse_idle_type("busy")


NONE = JupyterState()
OPEN_KERNEL = JupyterState(kernels=1)
CONNECTED = JupyterState(kernels=1, kernel_connections=1)
BUSY = JupyterState(kernels=1, busy_kernels=1, kernel_connections=1)
TERMINAL = JupyterState(terminals=1)


@pytest.mark.parametrize(
    ("kind", "idle_type", "jupyter", "idle_s", "killed"),
    [
        # too early: never
        (Kind.NOTEBOOK, ACTIVITY, NONE, 59, False),
        (Kind.TENSORBOARD, ACTIVITY, None, 59, False),
        # a busy kernel keeps every notebook
        (Kind.NOTEBOOK, ACTIVITY, BUSY, 600, False),
        (Kind.NOTEBOOK, CONNS, BUSY, 600, False),
        (Kind.NOTEBOOK, K_OR_T, BUSY, 600, False),
        # kernels_or_terminals: open kernels or terminals keep it
        (Kind.NOTEBOOK, K_OR_T, OPEN_KERNEL, 600, False),
        (Kind.NOTEBOOK, K_OR_T, TERMINAL, 600, False),
        (Kind.NOTEBOOK, K_OR_T, NONE, 600, True),
        # kernel_connections: only connected kernels keep it
        (Kind.NOTEBOOK, CONNS, OPEN_KERNEL, 600, True),
        (Kind.NOTEBOOK, CONNS, CONNECTED, 600, False),
        # activity: only traffic and busy kernels count
        (Kind.NOTEBOOK, ACTIVITY, CONNECTED, 600, True),
        (Kind.NOTEBOOK, ACTIVITY, TERMINAL, 600, True),
        # a notebook whose Jupyter server did not answer is kept; a TensorBoard has none
        (Kind.NOTEBOOK, K_OR_T, None, 600, False),
        (Kind.NOTEBOOK, ACTIVITY, None, 600, False),
        (Kind.TENSORBOARD, K_OR_T, None, 600, True),
        # shells never idle out
        (Kind.SHELL, ACTIVITY, None, 10**6, False),
    ],
)
def test_idle_table(
    kind: Kind, idle_type: IdleType, jupyter: JupyterState | None, idle_s: int, killed: bool
) -> None:
    a = Activity(kind, 60.0, T0, idle_type, jupyter)
    verdict = idle_verdict(a, T0 + timedelta(seconds=idle_s))
    assert (verdict is not None) is killed
    if killed:
        assert f"{idle_s}s" in verdict  # type: ignore[operator]


@given(
    kind=st.sampled_from(Kind),
    idle_type=st.sampled_from(IdleType),
    timeout=st.one_of(st.none(), st.floats(min_value=1, max_value=10**6)),
    idle_s=st.floats(min_value=0, max_value=10**7),
)
def test_never_killed_before_the_timeout_nor_without_one(
    kind: Kind, idle_type: IdleType, timeout: float | None, idle_s: float
) -> None:
    a = Activity(kind, timeout, T0, idle_type, NONE if kind is Kind.NOTEBOOK else None)
    verdict = idle_verdict(a, T0 + timedelta(seconds=idle_s))
    if timeout is None or idle_s < timeout or kind is Kind.SHELL:
        assert verdict is None
    elif idle_s >= timeout + 0.001:  # datetimes keep microseconds: the edge itself is not exact
        assert verdict is not None and "killed" in verdict


def _at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def _tb(task_id: str = "t", stored: int | None = None, proxied: int | None = None) -> IdleFacts:
    """A TensorBoard with a 60 s timeout; times in seconds after T0."""
    return IdleFacts(
        task_id,
        Kind.TENSORBOARD,
        60,
        None if stored is None else _at(stored),
        None if proxied is None else _at(proxied),
    )


@pytest.mark.parametrize(
    ("facts", "now_s", "plan"),
    [
        pytest.param(_tb(), 0, IdlePlan(store=(("t", _at(0)),)), id="first seen: clock starts"),
        pytest.param(_tb(stored=0), 59, IdlePlan(), id="within the timeout"),
        pytest.param(
            _tb(stored=0),
            60,
            IdlePlan(
                kill=(("t", "TensorBoard received no requests for 60s (timeout 60s): killed"),)
            ),
            id="restarted master: the stored clock counts",
        ),
        pytest.param(_tb(stored=0, proxied=4), 50, IdlePlan(), id="moved under 5 s: no write"),
        pytest.param(
            _tb(stored=0, proxied=30),
            70,
            IdlePlan(store=(("t", _at(30)),)),
            id="moved on: stored, and it keeps the task",
        ),
        pytest.param(
            _tb(stored=30, proxied=10), 80, IdlePlan(), id="an older request never moves it back"
        ),
    ],
)
def test_decide_idle(facts: IdleFacts, now_s: float, plan: IdlePlan) -> None:
    assert decide_idle(IdleSnapshot(now=_at(now_s), tasks=(facts,))) == plan


def test_a_busy_kernel_counts_as_activity() -> None:
    busy = IdleFacts(
        "n", Kind.NOTEBOOK, 60, _at(0), None, ACTIVITY, JupyterState(kernels=1, busy_kernels=1)
    )
    assert decide_idle(IdleSnapshot(now=_at(100), tasks=(busy,))) == IdlePlan(
        store=(("n", _at(100)),)
    )
    unknown = IdleFacts("n", Kind.NOTEBOOK, 60, _at(0), None, ACTIVITY, None)
    assert decide_idle(IdleSnapshot(now=_at(100), tasks=(unknown,))) == IdlePlan()
    idle = IdleFacts("n", Kind.NOTEBOOK, 60, _at(0), None, ACTIVITY, JupyterState(kernels=1))
    assert decide_idle(IdleSnapshot(now=_at(100), tasks=(idle,))).kill[0][0] == "n"


@given(
    stored=st.none() | st.integers(0, 1000),
    proxied=st.none() | st.integers(0, 1000),
    now=st.integers(1000, 3000),
)
def test_stores_at_most_once_per_interval_and_never_backwards(
    stored: int | None, proxied: int | None, now: int
) -> None:
    plan = decide_idle(IdleSnapshot(now=_at(now), tasks=(_tb("t", stored, proxied),)))
    for _, at in plan.store:
        if stored is not None:
            assert (at - _at(stored)).total_seconds() >= 5
