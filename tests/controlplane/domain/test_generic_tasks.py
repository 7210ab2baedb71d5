"""Generic tasks: the wire state, what pause, unpause and kill decide, and the tree a kill
reaches."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain.command_states import (
    CommandState,
    check_command_transition,
    is_pause_exit,
    state_after_exit,
    wire_state,
)
from controlplane.domain.errors import Conflict
from controlplane.domain.generic_tasks import (
    GenericTaskState,
    generic_state,
    kill_target,
    pause_target,
    root_of,
    subtree,
    unpause_target,
)

C = CommandState
G = GenericTaskState


class TestGenericState:
    @pytest.mark.parametrize(
        ("state", "exit_code", "killed", "expected"),
        [
            (C.ACTIVE, None, False, G.ACTIVE),
            (C.PAUSING, None, False, G.PAUSED),  # as Determined shows it once accepted
            (C.PAUSED, None, False, G.PAUSED),
            (C.UNPAUSING, None, False, G.ACTIVE),
            (C.TERMINATING, None, False, G.STOPPING_CANCELED),
            (C.TERMINATED, 0, False, G.COMPLETED),
            (C.TERMINATED, 3, False, G.ERROR),
            (C.TERMINATED, None, False, G.ERROR),
            (C.TERMINATED, 137, True, G.CANCELED),
            (C.TERMINATED, None, True, G.CANCELED),
        ],
    )
    def test_table(
        self, state: CommandState, exit_code: int | None, killed: bool, expected: G
    ) -> None:
        assert generic_state(state, exit_code, killed) is expected

    @pytest.mark.parametrize(
        ("state", "wire"),
        [
            (C.PAUSING, "STATE_TERMINATING"),
            (C.UNPAUSING, "STATE_TERMINATING"),
            (C.PAUSED, "STATE_WAITING"),
        ],
    )
    def test_task_wire_state_of_a_pause(self, state: CommandState, wire: str) -> None:
        assert wire_state(state, None) == wire


class TestPause:
    @pytest.mark.parametrize(
        ("state", "running", "expected"),
        [
            (C.ACTIVE, False, C.PAUSED),
            (C.ACTIVE, True, C.PAUSING),
            (C.PAUSED, False, None),
            (C.PAUSING, True, None),
            (C.UNPAUSING, True, C.PAUSING),
        ],
    )
    def test_table(self, state: CommandState, running: bool, expected: C | None) -> None:
        assert pause_target(state, running=running, no_pause=False, what="task t") is expected
        if expected is not None:
            assert check_command_transition(state, expected, "task t")

    @pytest.mark.parametrize("state", [C.TERMINATING, C.TERMINATED])
    def test_an_ended_task_is_not_paused(self, state: CommandState) -> None:
        with pytest.raises(Conflict, match="only an active task"):
            pause_target(state, running=False, no_pause=False, what="task t")

    def test_no_pause_refuses(self) -> None:
        with pytest.raises(Conflict, match="noPause"):
            pause_target(C.ACTIVE, running=True, no_pause=True, what="task t")

    def test_a_pause_under_way_ends_paused_and_anything_else_ends(self) -> None:
        assert state_after_exit(C.PAUSING) is C.PAUSED
        assert state_after_exit(C.UNPAUSING) is C.ACTIVE  # queued again
        for state in (C.PAUSING, C.UNPAUSING):
            assert is_pause_exit(state)
            assert check_command_transition(state, state_after_exit(state), "task t")
        for state in (C.ACTIVE, C.TERMINATING):
            assert not is_pause_exit(state)
            assert state_after_exit(state) is C.TERMINATED
            assert check_command_transition(state, C.TERMINATED, "task t")


class TestUnpause:
    def test_table(self) -> None:
        assert unpause_target(C.PAUSED, what="task t") is C.ACTIVE
        assert check_command_transition(C.PAUSED, C.ACTIVE, "task t")
        assert unpause_target(C.PAUSING, what="task t") is C.UNPAUSING
        assert check_command_transition(C.PAUSING, C.UNPAUSING, "task t")
        assert unpause_target(C.ACTIVE, what="task t") is None
        assert unpause_target(C.UNPAUSING, what="task t") is None

    @pytest.mark.parametrize("state", [C.TERMINATING, C.TERMINATED])
    def test_only_a_paused_task(self, state: CommandState) -> None:
        with pytest.raises(Conflict, match="only a paused task"):
            unpause_target(state, what="task t")


class TestKill:
    @pytest.mark.parametrize(
        ("state", "running", "expected"),
        [
            (C.ACTIVE, False, (C.TERMINATED, "killed before it started")),
            (C.ACTIVE, True, (C.TERMINATING, None)),
            (C.PAUSING, True, (C.TERMINATING, None)),
            (C.UNPAUSING, True, (C.TERMINATING, None)),
            (C.PAUSED, False, (C.TERMINATED, "killed while paused")),
            (C.TERMINATING, True, None),
            (C.TERMINATED, False, None),
        ],
    )
    def test_table(
        self, state: CommandState, running: bool, expected: tuple[C, str | None] | None
    ) -> None:
        assert kill_target(state, running=running) == expected
        if expected is not None:
            assert check_command_transition(state, expected[0], "task t")


class TestTree:
    PARENTS = {"root": None, "a": "root", "b": "root", "a1": "a", "a2": "a", "other": None}

    def test_subtree_parents_first(self) -> None:
        assert subtree("root", self.PARENTS) == ["root", "a", "b", "a1", "a2"]
        assert subtree("a", self.PARENTS) == ["a", "a1", "a2"]
        assert subtree("b", self.PARENTS) == ["b"]

    def test_root(self) -> None:
        assert root_of("a2", self.PARENTS) == "root"
        assert root_of("other", self.PARENTS) == "other"
        assert root_of("unknown", self.PARENTS) == "unknown"

    def test_a_cycle_in_the_rows_ends(self) -> None:
        looped = {"x": "y", "y": "x"}
        assert root_of("x", looped) in {"x", "y"}
        assert sorted(subtree("x", looped)) == ["x", "y"]

    @given(st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=30))
    def test_subtree_is_exactly_the_descendants(self, picks: list[int]) -> None:
        # Task i's parent is one of the tasks before it (a forest, as creation order makes).
        parents: dict[str, str | None] = {"t0": None}
        for i, pick in enumerate(picks, start=1):
            parents[f"t{i}"] = None if pick == 0 else f"t{pick % i}"
        for task in parents:
            expected = {t for t in parents if _ancestors(t, parents) & {task} or t == task}
            got = subtree(task, parents)
            assert set(got) == expected and len(got) == len(expected)
            for t in got[1:]:
                assert got.index(str(parents[t])) < got.index(t)
            assert root_of(task, parents) in {task} | _ancestors(task, parents)


def _ancestors(task: str, parents: dict[str, str | None]) -> set[str]:
    out: set[str] = set()
    current = parents.get(task)
    while current is not None:
        out.add(current)
        current = parents.get(current)
    return out
