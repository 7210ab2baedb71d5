"""Users and auth on the wire."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from controlplane.api.schemas.common import Int32, Pagination, Wire


class LoginRequest(Wire):
    username: str = Field(max_length=255)
    password: str = Field(max_length=4096)
    is_hashed: bool = False


# A Unix user or group name as Linux tools accept it (useradd allows more; this is plenty).
UnixName = Annotated[
    str, Field(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.@-]*\$?$")
]
UnixId = Annotated[int, Field(ge=0, le=2**32 - 2)]


class AgentUserGroup(Wire):
    """Determined's v1AgentUserGroup: the Unix user and group a user's tasks run as."""

    agent_uid: UnixId | None = None
    agent_gid: UnixId | None = None
    agent_user: UnixName | None = None
    agent_group: UnixName | None = None


class UserOut(Wire):
    id: int
    username: str
    admin: bool
    active: bool
    display_name: str | None = None
    modified_at: datetime | None = None
    remote: bool = False
    agent_user_group: AgentUserGroup | None = None


class LoginResponse(Wire):
    token: str
    user: UserOut


class MeResponse(Wire):
    user: UserOut


class UsersResponse(Wire):
    users: list[UserOut]
    pagination: Pagination


class NewUser(Wire):
    username: str = Field(max_length=255)
    admin: bool = False
    active: bool = True
    display_name: str | None = Field(None, max_length=255)
    remote: bool = False  # Determined's SSO-only users: refused, there is no SSO here


class CreateUserRequest(Wire):
    user: NewUser
    password: str | None = Field(None, max_length=4096)
    is_hashed: bool = False


class PatchUserRequest(Wire):
    display_name: str | None = Field(None, max_length=255)
    username: str | None = Field(None, max_length=255)  # a rename: admin only
    # Determined's remote (SSO-only) users: refused here, where there is no SSO to log in with
    remote: bool | None = None
    active: bool | None = None
    admin: bool | None = None
    password: str | None = Field(None, max_length=4096)
    is_hashed: bool = False
    # Admin only. All four fields link the user (`det user link-with-agent-user`); an empty
    # object unlinks it; null or absent leaves the link as it is.
    agent_user_group: AgentUserGroup | None = None


class SetPasswordRequest(Wire):
    password: str = Field(max_length=4096)
    is_hashed: bool = False


class UserResponse(Wire):
    user: UserOut


class UserFilters(Wire):
    name: str | None = Field(default=None, max_length=255)
    admin: bool | None = None


class PatchUsersRequest(Wire):
    user_ids: list[Int32] = Field(default_factory=list, max_length=10_000)
    activate: bool
    filters: UserFilters | None = None


class UserActionResult(Wire):
    error: str
    id: int


class PatchUsersResponse(Wire):
    results: list[UserActionResult]
