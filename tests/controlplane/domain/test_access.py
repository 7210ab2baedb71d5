"""Who may call what: every caller kind x route class x target, as one written-out table."""

from __future__ import annotations

import itertools

import pytest

from controlplane.domain.access import CallerKind, RouteClass, Target, decide

C, R, T = CallerKind, RouteClass, Target
ALL, NO = frozenset(Target), frozenset[Target]()
OWN_OR_BODY = frozenset({T.OWN, T.NONE})  # a path naming another object is refused

# (caller, route class or None for an unclassified route) -> the targets it is allowed on.
ALLOWED: dict[tuple[CallerKind, RouteClass | None], frozenset[Target]] = {
    # Users: the route's own checks decide (ownership, admin); the class never refuses them,
    # except the admin-only routes for a user who is not an admin.
    **{(C.USER, r): ALL for r in RouteClass if r not in (R.ADMIN, R.AGENT)},
    (C.USER, R.ADMIN): NO,
    (C.USER, R.AGENT): NO,
    (C.USER, None): ALL,
    **{(C.ADMIN, r): ALL for r in RouteClass if r is not R.AGENT},
    (C.ADMIN, R.AGENT): NO,
    (C.ADMIN, None): ALL,
    # A trial's token: reads, and its own trial, allocation and experiment; nothing else.
    (C.TRIAL, R.PUBLIC): ALL,
    (C.TRIAL, R.AGENT): NO,
    (C.TRIAL, R.ADMIN): NO,
    (C.TRIAL, R.ACCOUNT): NO,
    (C.TRIAL, R.READ): ALL,
    (C.TRIAL, R.OWNER_WRITE): frozenset({T.OWN}),
    (C.TRIAL, R.TASK_REPORT): OWN_OR_BODY,
    (C.TRIAL, None): NO,
    # Commands and interactive tasks act as their owner, never on admin routes or accounts.
    (C.TASK, R.PUBLIC): ALL,
    (C.TASK, R.AGENT): NO,
    (C.TASK, R.ADMIN): NO,
    (C.TASK, R.ACCOUNT): NO,
    (C.TASK, R.READ): ALL,
    (C.TASK, R.OWNER_WRITE): ALL,
    (C.TASK, R.TASK_REPORT): OWN_OR_BODY,
    (C.TASK, None): NO,
}

CELLS = list(itertools.product(CallerKind, [*RouteClass, None], Target))


def test_the_table_covers_every_cell() -> None:
    assert set(ALLOWED) == {(c, r) for c, r, _ in CELLS}


@pytest.mark.parametrize(("caller", "route", "target"), CELLS)
def test_decide(caller: CallerKind, route: RouteClass | None, target: Target) -> None:
    decision = decide(caller, route, target)
    assert decision.allowed == (target in ALLOWED[caller, route])
    assert decision.allowed or decision.reason  # a refusal always says why


@pytest.mark.parametrize("caller", [C.TRIAL, C.TASK])
@pytest.mark.parametrize("target", list(Target))
def test_no_task_token_ever_passes_an_admin_route(caller: CallerKind, target: Target) -> None:
    assert not decide(caller, R.ADMIN, target).allowed
    assert not decide(caller, R.ACCOUNT, target).allowed
    assert "task" in decide(caller, R.ADMIN, target).reason
