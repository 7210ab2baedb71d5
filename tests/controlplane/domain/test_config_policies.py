"""Config policies: parsing Determined's YAML, the global policy over the workspace's, the
invariant values in place of the user's, and the constraints' refusals."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain import config_policies as rules
from controlplane.domain.errors import InvalidArgument

POLICY = """
invariant_config:
  description: team run
  resources:
    resource_pool: gpus
constraints:
  resources:
    max_slots: 8
  priority_limit: 10
"""


def test_parse_and_back() -> None:
    p = rules.parse(POLICY)
    assert p.invariant == {"description": "team run", "resources": {"resource_pool": "gpus"}}
    assert (p.max_slots, p.priority_limit) == (8, 10)
    assert rules.parse(json.dumps(p.wire())) == p  # JSON text reads too
    assert rules.parse("").empty


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[1, 2]", "mapping"),
        ("extra: 1", "unknown config policy keys"),
        ("constraints: {gpus: 1}", "unknown constraints"),
        ("constraints: {resources: {slots: 1}}", "only hold max_slots"),
        ("constraints: {resources: {max_slots: -1}}", "whole number"),
        ("constraints: {priority_limit: true}", "whole number"),
        ("invariant_config: 5", "must be a mapping"),
        ("a: [", "not valid YAML"),
        (
            "invariant_config: {resources: {slots_per_trial: 16}}\n"
            "constraints: {resources: {max_slots: 8}}",
            "breaks the constraints",
        ),
    ],
)
def test_bad_policies(text: str, why: str) -> None:
    with pytest.raises(InvalidArgument, match=why):
        rules.parse(text)


def test_global_wins_over_the_workspace() -> None:
    ws = rules.Policy(invariant={"description": "ws", "labels": ["a"]}, max_slots=4)
    gl = rules.Policy(invariant={"description": "global"}, priority_limit=5)
    eff = rules.effective(gl, ws)
    assert eff.invariant == {"description": "global", "labels": ["a"]}
    assert (eff.max_slots, eff.priority_limit) == (4, 5)
    assert rules.effective(None, None).empty


@pytest.mark.parametrize(
    ("resources", "ok"),
    [
        ({"slots_per_trial": 8, "priority": 10}, True),
        ({"slots_per_trial": 9}, False),
        ({"max_slots": 12}, False),
        ({"slots": 9}, False),
        ({"priority": 9}, False),
        ({"priority": 50}, True),
        ({}, True),
    ],
)
def test_constraints(resources: dict[str, int], ok: bool) -> None:
    policy = rules.parse(POLICY)
    if ok:
        rules.check({"resources": resources}, policy)
    else:
        with pytest.raises(InvalidArgument, match="config policies"):
            rules.check({"resources": resources}, policy)


config_values = st.recursive(
    st.one_of(st.integers(), st.text(max_size=5)),
    lambda inner: st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
    max_leaves=8,
)


@given(
    st.dictionaries(st.sampled_from("abcd"), config_values, max_size=4),
    st.dictionaries(st.sampled_from("abcd"), config_values, max_size=4),
)
def test_invariant_values_always_win(user: dict, invariant: dict) -> None:
    merged = rules.apply_invariant(user, rules.Policy(invariant=invariant))

    def within(inv: dict, got: dict) -> None:
        for key, value in inv.items():
            if isinstance(value, dict) and isinstance(got[key], dict):
                within(value, got[key])
            else:
                assert got[key] == value

    within(invariant, merged)
    for key in user.keys() - invariant.keys():
        assert merged[key] == user[key]
