"""Exceptions the CLI turns into one red line on stderr and exit code 1."""

from __future__ import annotations


class CliError(Exception):
    """An expected failure: shown as a single line, never as a traceback."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class MasterUnreachable(CliError):
    """No HTTP conversation with the master was possible."""

    def __init__(self, url: str, reason: str = "") -> None:
        text = f"cannot reach the master at {url}"
        super().__init__(f"{text}: {reason}" if reason else text)
        self.url = url


class ApiError(CliError):
    """The master answered with an error status; `detail` is the master's own message."""

    def __init__(
        self, status: int, message: str, *, method: str = "", path: str = "", detail: str = ""
    ) -> None:
        super().__init__(message)
        self.status = status
        self.method = method
        self.path = path
        self.detail = detail


class Unauthenticated(ApiError):
    """401: no valid token; the user has to log in."""


class Forbidden(ApiError):
    """403: the master refused the request for this user."""


class NotFound(ApiError):
    """404: the object (or the endpoint) does not exist."""


class LoginFailed(CliError):
    """The master refused a username/password pair."""


class StreamError(ApiError):
    """An `{"error": ...}` line arrived in an NDJSON stream."""


UNAUTHENTICATED_HINT = "Unauthenticated: please run 'det user login <username>'"
