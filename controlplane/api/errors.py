"""ONE table from domain errors to HTTP status and gRPC code; every error has the same body."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from http import HTTPStatus

from litestar import Request, Response
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.handlers import HTTPRouteHandler
from litestar.openapi import ResponseSpec
from pydantic import ValidationError
from sqlalchemy.exc import DBAPIError

from controlplane.api.schemas.common import ErrorBody
from controlplane.domain import errors as e
from controlplane.services.db_outage import DbOutageWatch, outage_watch
from controlplane.services.db_unavailable import Unavailability, classify

log = logging.getLogger(__name__)

# (HTTP status, gRPC code) per domain error; the first matching class in MRO order wins.
STATUS: dict[type[e.DomainError], tuple[int, int]] = {
    e.InvalidArgument: (400, 3),
    e.Unauthenticated: (401, 16),
    e.PermissionDenied: (403, 7),
    e.NotFound: (404, 5),
    e.InvalidTransition: (409, 9),
    e.Conflict: (409, 6),
    e.PayloadTooLarge: (413, 8),
    e.Unavailable: (503, 14),
}
_HTTP_TO_GRPC = {400: 3, 401: 16, 403: 7, 404: 5, 405: 12, 409: 6, 413: 8, 415: 3, 429: 8, 503: 14}

# What the OpenAPI document says every operation may answer: the one error body, not Litestar's
# own `{status_code, detail}` shape that it would otherwise document for 400.
ERROR_RESPONSES: dict[int, ResponseSpec] = {
    status: ResponseSpec(
        data_container=ErrorBody, description=HTTPStatus(status).phrase, generate_examples=False
    )
    for status in sorted({status for status, _ in STATUS.values()})
}


def document_errors(handlers: Iterable[object]) -> None:
    """Add ERROR_RESPONSES to each HTTP handler's documented responses (its own ones win)."""
    for handler in handlers:
        if isinstance(handler, HTTPRouteHandler):
            handler.responses = {**ERROR_RESPONSES, **(handler.responses or {})}


# Seconds a client is told to wait before it tries again after a 503. Short: the answer costs
# the master little (no database work), and clients back off further on their own.
RETRY_AFTER_S = 2
DB_UNAVAILABLE_MESSAGE = "the database is unavailable; retry shortly"


def error_response(status: int, grpc: int, message: str) -> Response[dict[str, object]]:
    body = {"code": grpc, "message": message, "error": {"error": message}, "details": []}
    headers = {"Retry-After": str(RETRY_AFTER_S)} if status == 503 else None
    return Response(
        content=body, status_code=status, media_type="application/json", headers=headers
    )


def _watch(request: Request) -> DbOutageWatch | None:
    """The master's database watch (None before start-up has made the app's context)."""
    ctx = request.app.state.get("api")
    factory = getattr(ctx, "sessionmaker", None)
    return outage_watch(factory) if factory is not None else None


def db_unavailable(
    request: Request, exc: BaseException, kind: Unavailability
) -> Response[dict[str, object]]:
    """503 + Retry-After; the outage is logged once for the whole master, not per request."""
    watch = _watch(request)
    if watch is not None:
        watch.unavailable(exc, kind, "API requests")
    else:
        log.warning("database unavailable: %s", kind.value)
    return error_response(503, 14, DB_UNAVAILABLE_MESSAGE)


def status_for(exc: e.DomainError) -> tuple[int, int]:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]  # type: ignore[index]
    return 500, 13


def domain_handler(request: Request, exc: e.DomainError) -> Response[dict[str, object]]:
    if isinstance(exc, e.Unavailable) and exc.__cause__ is not None:
        kind = classify(exc.__cause__)
        if kind is not None:
            return db_unavailable(request, exc.__cause__, kind)
    status, grpc = status_for(exc)
    return error_response(status, grpc, exc.message)


def http_handler(_: Request, exc: HTTPException) -> Response[dict[str, object]]:
    message = exc.detail or "error"
    if isinstance(exc, ValidationException) and exc.extra:
        parts = []
        for item in exc.extra if isinstance(exc.extra, list) else [exc.extra]:
            if not isinstance(item, dict):
                continue
            key, text = item.get("key", ""), str(item.get("message", ""))
            if key == "data" and text.strip("'") == "data":
                text = "a JSON request body is required"  # Litestar's wording for a missing body
            parts.append(f"{key}: {text}".strip(": "))
        if parts:
            message = f"{message}: " + "; ".join(parts)
    if isinstance(exc, NotFoundException) and message == "Not Found":
        message = "no such endpoint"
    return error_response(exc.status_code, _HTTP_TO_GRPC.get(exc.status_code, 2), message)


def pydantic_handler(_: Request, exc: ValidationError) -> Response[dict[str, object]]:
    parts = [f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()[:10]]
    return error_response(400, 3, "invalid request: " + "; ".join(parts))


# SQLSTATE class 22, "data exception": the database refused a value it was given (a NUL in
# text, a string longer than its column, a number out of range). Input validation should catch
# these first; this keeps the ones it misses a client error.
_NUL_IN_TEXT = {"22021", "22P05"}  # character_not_in_repertoire, untranslatable_character


def _data_exception(exc: DBAPIError) -> str | None:
    state = getattr(exc.orig, "sqlstate", None)
    if not isinstance(state, str) or not state.startswith("22"):
        return None
    if state in _NUL_IN_TEXT:
        return "text must not contain NUL (\\u0000) characters"
    return "invalid value: " + str(exc.orig).splitlines()[0]


def db_handler(request: Request, exc: DBAPIError) -> Response[dict[str, object]]:
    """An unreachable database is retryable (503), a refused value is the client's (400);
    anything else is our bug (500), logged."""
    kind = classify(exc)
    if kind is not None:
        return db_unavailable(request, exc, kind)
    reason = _data_exception(exc)
    if reason is not None:
        log.warning("database refused a value: %s", exc.orig)
        return error_response(400, 3, reason)
    log.exception("database error")
    return error_response(500, 13, "internal database error")


def internal_handler(request: Request, exc: Exception) -> Response[dict[str, object]]:
    kind = classify(exc)  # SQLAlchemy's pool timeout, or a driver error wrapped in another
    if kind is not None:
        return db_unavailable(request, exc, kind)
    log.exception("unhandled error", exc_info=exc)
    return error_response(500, 13, "internal error")


def connection_handler(request: Request, exc: Exception) -> Response[dict[str, object]]:
    """asyncpg raises a bare ConnectionError/TimeoutError when it cannot connect at all."""
    kind = classify(exc)
    if kind is not None:
        return db_unavailable(request, exc, kind)
    log.warning("a service the master needs did not answer: %r", exc)
    return error_response(503, 14, "a service the master needs did not answer; retry shortly")


HANDLERS = {
    e.DomainError: domain_handler,
    ConnectionError: connection_handler,
    TimeoutError: connection_handler,
    HTTPException: http_handler,
    ValidationError: pydantic_handler,
    DBAPIError: db_handler,
    Exception: internal_handler,
}
