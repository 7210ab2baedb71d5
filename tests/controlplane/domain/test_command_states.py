"""Command states: the transition table, the wire state, and what an exit means."""

from __future__ import annotations

import pytest

from agent.protocol import FailureType
from controlplane.domain.command_names import (
    ADJECTIVES,
    ADVERBS,
    NOUNS,
    default_description,
    default_experiment_name,
)
from controlplane.domain.command_states import (
    COMMAND_TRANSITIONS,
    CommandState,
    check_command_transition,
    command_after_exit,
    wire_state,
)
from controlplane.domain.errors import InvalidTransition
from controlplane.domain.trial_exit import AllocationExit

C = CommandState


class TestTransitions:
    def test_every_state_but_terminated_can_end(self) -> None:
        for state in (C.ACTIVE, C.TERMINATING):
            assert check_command_transition(state, C.TERMINATED, "command x")

    @pytest.mark.parametrize(
        ("current", "target"),
        [
            (C.TERMINATED, C.ACTIVE),
            (C.TERMINATED, C.TERMINATING),
            (C.TERMINATING, C.ACTIVE),
            (C.ACTIVE, C.ACTIVE),
        ],
    )
    def test_refused_edges_name_both_states(self, current: C, target: C) -> None:
        assert (current, target) not in COMMAND_TRANSITIONS
        with pytest.raises(InvalidTransition, match=f"{current.value}.*{target.value}"):
            check_command_transition(current, target, "command x")


class TestWireState:
    @pytest.mark.parametrize(
        ("state", "allocation", "wire"),
        [
            (C.ACTIVE, None, "STATE_QUEUED"),
            (C.ACTIVE, "ASSIGNED", "STATE_QUEUED"),
            (C.ACTIVE, "PULLING", "STATE_PULLING"),
            (C.ACTIVE, "STARTING", "STATE_STARTING"),
            (C.ACTIVE, "RUNNING", "STATE_RUNNING"),
            (C.TERMINATING, "RUNNING", "STATE_TERMINATING"),
            (C.TERMINATED, None, "STATE_TERMINATED"),
            (C.TERMINATED, "RUNNING", "STATE_TERMINATED"),
        ],
    )
    def test_derived_from_command_and_live_allocation(
        self, state: C, allocation: str | None, wire: str
    ) -> None:
        assert wire_state(state, allocation) == wire


class TestAfterExit:
    def test_exit_zero_succeeds(self) -> None:
        out = command_after_exit(AllocationExit(exit_code=0), killed=False)
        assert (out.exit_code, out.failed) == (0, False)
        assert out.status == "command exited successfully"

    def test_non_zero_exit_fails_with_its_code(self) -> None:
        out = command_after_exit(
            AllocationExit(exit_code=3, failure=FailureType.CONTAINER_FAILED.value), killed=False
        )
        assert (out.exit_code, out.failed) == (3, True)
        assert out.status == "command exited with code 3"

    def test_lost_agent_ends_the_command_as_failed(self) -> None:
        out = command_after_exit(
            AllocationExit(exit_code=None, failure=FailureType.AGENT_FAILED.value), killed=False
        )
        assert out.failed and out.exit_code is None
        assert FailureType.AGENT_FAILED.value in out.status

    def test_a_kill_is_reported_as_such_whatever_the_code(self) -> None:
        for code in (0, 137, None):
            out = command_after_exit(AllocationExit(exit_code=code), killed=True)
            assert out.failed and out.status == "killed by user request"
            assert out.exit_code == code

    def test_a_kill_by_the_master_says_so(self) -> None:
        out = command_after_exit(AllocationExit(exit_code=137, killed=True), killed=False)
        assert (out.exit_code, out.failed, out.status) == (137, True, "killed by the master")
        # A command that exited 0 on its own before the SIGKILL landed still succeeded.
        out = command_after_exit(AllocationExit(exit_code=0, killed=True), killed=False)
        assert not out.failed


class TestDefaultDescription:
    def test_stable_and_well_formed(self) -> None:
        name = default_description("0b9d3c62-6e1e-4c5e-9d45-2d8cf2bb8a10")
        assert name == default_description("0b9d3c62-6e1e-4c5e-9d45-2d8cf2bb8a10")
        adjective, noun = name.removeprefix("Command (").removesuffix(")").split("-")
        assert adjective in ADJECTIVES and noun in NOUNS

    def test_different_ids_spread_over_the_words(self) -> None:
        names = {default_description(f"task-{i}") for i in range(200)}
        assert len(names) > 100


class TestDefaultExperimentName:
    """Determined names an experiment config without a name "Experiment (<3-word petname>)"."""

    def test_stable_and_well_formed(self) -> None:
        name = default_experiment_name("seed")
        assert name == default_experiment_name("seed")
        adverb, adjective, noun = name.removeprefix("Experiment (").removesuffix(")").split("-")
        assert adverb in ADVERBS and adjective in ADJECTIVES and noun in NOUNS

    def test_different_seeds_spread_over_the_words(self) -> None:
        assert len({default_experiment_name(f"s{i}") for i in range(200)}) > 150
