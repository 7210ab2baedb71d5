"""Users and auth on the wire."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from controlplane.api.schemas.common import Pagination, Wire


class LoginRequest(Wire):
    username: str = Field(max_length=255)
    password: str = Field(max_length=4096)
    is_hashed: bool = False


class UserOut(Wire):
    id: int
    username: str
    admin: bool
    active: bool
    display_name: str | None = None
    modified_at: datetime | None = None
    remote: bool = False


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


class CreateUserRequest(Wire):
    user: NewUser
    password: str | None = Field(None, max_length=4096)
    is_hashed: bool = False


class PatchUserRequest(Wire):
    display_name: str | None = Field(None, max_length=255)
    active: bool | None = None
    admin: bool | None = None
    password: str | None = Field(None, max_length=4096)
    is_hashed: bool = False


class SetPasswordRequest(Wire):
    password: str = Field(max_length=4096)
    is_hashed: bool = False


class UserResponse(Wire):
    user: UserOut
