"""Desired new instances (reference §2.2; scaling_test and resource_pool_test cases, §1.5)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resource_pools.scaling import agent_idle_flags, desired_new_instances, is_countable
from resource_pools.types import AgentState, JobSettings, Request

_ids = itertools.count()


def task(slots: int, job_id: str | None = None) -> Request:
    allocation_id = f"alloc-{next(_ids)}"
    return Request(allocation_id, job_id or allocation_id, slots)


def desired(pending: list[Request], spa: int, aux: int, groups: dict | None = None) -> int:
    return desired_new_instances(
        pending, groups or {}, slots_per_instance=spa, max_aux_per_agent=aux
    )


def test_group_caps_give_six_instances() -> None:
    pending = [
        *(task(s, "g1") for s in (1, 1, 3)),
        *(task(s, "g2") for s in (4, 1)),
        *(task(s, "g3") for s in (1, 3, 10)),
        task(15, "g4"),
    ]
    groups = {
        "g1": JobSettings("g1", max_slots=1),
        "g2": JobSettings("g2", max_slots=2),
        "g3": JobSettings("g3"),
        "g4": JobSettings("g4", max_slots=10),
    }
    assert desired(pending, spa=5, aux=10, groups=groups) == 6


ONE = [task(1)]
TWO = [*ONE, task(1)]
WITH_ZERO = [*TWO, task(0)]
WITH_FOUR = [*WITH_ZERO, task(4)]
WITH_THREE = [*WITH_FOUR, task(3)]
ANY_AUX = [0, 1, 100]


@pytest.mark.parametrize(
    ("pending", "spa", "aux_values", "expected"),
    [
        pytest.param(ONE, 0, ANY_AUX, 0, id="1 task, spa 0"),
        pytest.param(ONE, 1, ANY_AUX, 1, id="1 task, spa 1"),
        pytest.param(ONE, 2, ANY_AUX, 1, id="1 task, spa 2"),
        pytest.param(TWO, 1, ANY_AUX, 2, id="2 tasks, spa 1"),
        pytest.param(TWO, 2, ANY_AUX, 1, id="2 tasks, spa 2"),
        pytest.param(WITH_ZERO, 0, [100], 1, id="plus zero-slot, spa 0, aux 100"),
        pytest.param(WITH_ZERO, 0, [0], 0, id="plus zero-slot, spa 0, aux 0"),
        pytest.param(WITH_ZERO, 1, ANY_AUX, 2, id="plus zero-slot, spa 1"),
        pytest.param(WITH_FOUR, 1, ANY_AUX, 6, id="plus t(4), spa 1"),
        pytest.param(WITH_FOUR, 2, ANY_AUX, 3, id="plus t(4), spa 2"),
        pytest.param(WITH_THREE, 1, ANY_AUX, 9, id="plus t(3), spa 1"),
        pytest.param(WITH_THREE, 2, ANY_AUX, 3, id="plus t(3), spa 2 (t(3) ignored)"),
    ],
)
def test_sequential_cases(
    pending: list[Request], spa: int, aux_values: list[int], expected: int
) -> None:
    for aux in aux_values:
        assert desired(pending, spa, aux) == expected


def test_sequential_cases_in_one_job_match() -> None:
    pending = [task(s, "job") for s in (1, 1, 0, 4, 3)]
    assert desired(pending, spa=2, aux=100) == 3


def test_scaling_info_agent_summary() -> None:
    assert desired([task(1), task(5)], spa=4, aux=100) == 1
    agents = [
        AgentState("idle", 4),
        AgentState("slotted", 4, used_slots=1),
        AgentState("aux", 4, zero_slot_running=1),
    ]
    assert agent_idle_flags(agents) == {"idle": True, "slotted": False, "aux": False}


def test_zero_slot_tasks_need_aux_places() -> None:
    assert desired([task(0) for _ in range(5)], spa=4, aux=2) == 3
    assert desired([task(0) for _ in range(5)], spa=4, aux=0) == 0


def test_max_slots_zero_removes_the_job() -> None:
    groups = {"j": JobSettings("j", max_slots=0)}
    assert desired([task(4, "j")], spa=4, aux=1, groups=groups) == 0


def test_countable_sizes() -> None:
    assert is_countable(task(3), 4)
    assert is_countable(task(8), 4)
    assert not is_countable(task(6), 4)
    assert not is_countable(task(0), 4)
    assert not is_countable(task(1), 0)


def test_negative_sizes_are_rejected() -> None:
    with pytest.raises(ValueError):
        desired([task(1)], spa=-1, aux=1)


@given(
    st.lists(st.tuples(st.integers(0, 20), st.sampled_from(["a", "b", "c"])), max_size=12),
    st.integers(0, 8),
    st.integers(0, 8),
)
def test_enough_instances_for_every_countable_task(
    specs: list[tuple[int, str]], spa: int, aux: int
) -> None:
    pending = [task(slots, job) for slots, job in specs]
    result = desired(pending, spa, aux)
    assert result >= 0
    counted = sum(r.slots for r in pending if is_countable(r, spa))
    if spa:
        assert result * spa >= counted
        assert result <= max(-(-counted // spa), -(-len(pending) // aux) if aux else 0)
    zero = sum(1 for r in pending if r.is_zero_slot)
    if aux:
        assert result * aux >= zero
    assert desired(list(reversed(pending)), spa, aux) == result
