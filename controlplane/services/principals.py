"""Who is calling: a user with a login token, or a task with its allocation token."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.db.models import Allocation, Task, Trial, User
from controlplane.domain import rbac
from controlplane.domain.errors import PermissionDenied, Unauthenticated
from controlplane.services import auth


@dataclass(frozen=True)
class Principal:
    user: User
    token: str
    allocation: Allocation | None = None
    # For a task's token: its task type, and for a trial its trial and experiment.
    task_type: str | None = None
    trial_id: int | None = None
    experiment_id: int | None = None
    # Under RBAC, what a caller who is not an admin holds (api/access.py sets it); None: RBAC
    # is off or the caller is an admin, and lists show everything.
    holdings: rbac.Holdings | None = None

    @property
    def task_id(self) -> str | None:
        return self.allocation.task_id if self.allocation else None

    def workspaces(self, permission: rbac.Permission) -> frozenset[int] | None:
        """The workspaces whose objects a list shows this caller; None: all of them."""
        return None if self.holdings is None else self.holdings.workspaces(permission)


# Every task request runs it: built once, so SQLAlchemy computes its cache key once.
_BY_ALLOCATION_TOKEN = (
    select(Allocation, User, Task.task_type, Trial.id, Trial.experiment_id)
    .join(Task, Task.task_id == Allocation.task_id)
    .join(User, User.id == Task.owner_id)
    .outerjoin(Trial, Trial.task_id == Task.task_id)
    .where(Allocation.token_hash == bindparam("token_hash"))
)


def acting_owner(owner: User) -> User:
    """The owner as its task acts for it: the same user, without an admin's rights.

    A detached copy, never added to a session: the owner's row is not changed. Every check of
    `user.admin` in the services then refuses a task, whoever owns it.
    """
    return User(
        id=owner.id,
        username=owner.username,
        display_name=owner.display_name,
        password_hash="",
        admin=False,
        active=owner.active,
        created_at=owner.created_at,
        modified_at=owner.modified_at,
    )


async def principal_for_allocation_token(
    session: AsyncSession, token: str, now: datetime
) -> Principal:
    """A task's token is valid while its allocation lives; it ends with the allocation."""
    digest = auth.token_digest(token)
    row = (await session.execute(_BY_ALLOCATION_TOKEN, {"token_hash": digest})).first()
    if row is None or row[0].end_time is not None:
        raise Unauthenticated("invalid or expired allocation token")
    alloc, owner, task_type, trial_id, experiment_id = row
    if not owner.active:
        raise Unauthenticated("the task's owner is not active")
    return Principal(
        user=acting_owner(owner),
        token=token,
        allocation=alloc,
        task_type=task_type,
        trial_id=trial_id,
        experiment_id=experiment_id,
    )


async def principal_for_user_token(session: AsyncSession, token: str, now: datetime) -> Principal:
    user = await auth.user_for_token(session, token, now=now)
    return Principal(user=user, token=token)


def can_write_trial(principal: Principal, trial: Trial, owner_id: int) -> None:
    """A task may write only its own trial; a user must own the experiment or be an admin."""
    if principal.allocation is not None:
        if principal.allocation.task_id != trial.task_id:
            raise PermissionDenied(f"this task's token is not valid for trial {trial.id}")
        return
    if not (principal.user.admin or principal.user.id == owner_id):
        raise PermissionDenied(f"only the owner of trial {trial.id} or an admin may report to it")
