"""Domain errors. `controlplane.api.errors` maps each class to one HTTP status."""

from __future__ import annotations


class DomainError(Exception):
    """Base class; `message` is shown to the user as is."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class NotFound(DomainError):
    """The named thing does not exist (or the caller may not know it exists)."""


class InvalidArgument(DomainError):
    """The request is malformed or violates a rule; retrying it unchanged will fail again."""


class Unauthenticated(DomainError):
    """No valid credentials were presented."""


class PermissionDenied(DomainError):
    """The caller is known but may not do this."""


class Conflict(DomainError):
    """The request collides with existing state (duplicate name, already exists)."""


class InvalidTransition(Conflict):
    """A state change that the transition table does not allow."""


class PayloadTooLarge(DomainError):
    """A body or an archive exceeds a documented limit."""


class Unavailable(DomainError):
    """A dependency (the database) is briefly unreachable; the client may retry."""
