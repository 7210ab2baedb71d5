"""The wire-level pieces of the fake GCE (tests/support/fake_gce.py): Google's error answers,
operation errors, and the request checks and list filters GCE applies."""

from __future__ import annotations

import json
import re
import urllib.parse
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
_FILTER_TERM = re.compile(r'^\s*(?P<field>[\w.-]+)\s*(?P<op>!=|=)\s*"?(?P<value>[^"]*?)"?\s*$')
# The HTTP status GCE puts on an operation that failed for these reasons.
_OPERATION_HTTP_STATUS = {
    "ZONE_RESOURCE_POOL_EXHAUSTED": (503, "SERVICE UNAVAILABLE"),
    "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS": (503, "SERVICE UNAVAILABLE"),
    "QUOTA_EXCEEDED": (403, "FORBIDDEN"),
}


class GceError(Exception):
    """An HTTP error answer in Google's format."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message

    def body(self) -> dict[str, Any]:
        error = {"domain": "global", "reason": self.reason, "message": self.message}
        return {"error": {"code": self.status, "message": self.message, "errors": [error]}}


class OperationError(Exception):
    """A launch problem GCE reports on the operation (error.errors[].code), not over HTTP."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def fail_operation(operation: dict[str, Any], failure: OperationError) -> None:
    status, status_text = _OPERATION_HTTP_STATUS.get(failure.code, (400, "BAD REQUEST"))
    error = {"code": failure.code, "message": failure.message}
    operation.update(error={"errors": [error]}, httpErrorStatusCode=status)
    operation["httpErrorMessage"] = status_text


def request_id_of(query: dict[str, str]) -> str | None:
    request_id = query.get("requestId")
    if request_id is not None:
        try:
            uuid.UUID(request_id)
        except ValueError:
            message = f"Invalid value for field 'requestId': {request_id}"
            raise GceError(400, "invalid", message) from None
    return request_id


def policy_zones(region: str, policy: Any) -> list[str]:
    """The zones a regional bulkInsert's locationPolicy allows, in its order. The fake wants
    the policy (GCE would pick among all the region's zones without one) and knows only the
    single-zone shape; a zone outside the region is GCE's 400."""
    if not isinstance(policy, dict) or not policy.get("locations"):
        raise GceError(400, "invalid", "the fake needs locationPolicy.locations")
    if policy.get("targetShape") != "ANY_SINGLE_ZONE":
        shape = policy.get("targetShape")
        raise GceError(400, "invalid", f"targetShape {shape!r}: the fake serves ANY_SINGLE_ZONE")
    zones = []
    for location, rule in policy["locations"].items():
        zone = location.removeprefix("zones/")
        if not location.startswith("zones/") or not zone.startswith(f"{region}-"):
            message = f"Invalid value for field 'locationPolicy': '{location}' not in {region}"
            raise GceError(400, "invalid", message)
        if (rule or {}).get("preference", "ALLOWED") in ("ALLOWED", "PREFERENCE_UNSPECIFIED"):
            zones.append(zone)
    if not zones:
        raise GceError(400, "invalid", "locationPolicy allows no zone")
    # GCE's choice among allowed zones is its own (a map has no order): the fake's is by name.
    return sorted(zones)


def check_name(name: str) -> None:
    if not NAME.match(name):
        raise GceError(400, "invalid", f"Invalid value for field 'resource.name': '{name}'")


def parse_filter(text: str) -> list[Callable[[dict[str, Any]], bool]]:
    """GCE's list filter, the part we use: `(field op value)` terms joined by AND."""
    if not text.strip():
        return []
    matches = []
    for term in re.split(r"\s+AND\s+", text.strip(), flags=re.IGNORECASE):
        inner = term.strip()
        if inner.startswith("(") and inner.endswith(")"):
            inner = inner[1:-1]
        parsed = _FILTER_TERM.match(inner)
        if parsed is None:
            raise GceError(400, "invalid", f"Invalid value for field 'filter': '{text}'")
        matches.append(_term(parsed["field"], parsed["op"], parsed["value"]))
    return matches


def _term(field: str, op: str, value: str) -> Callable[[dict[str, Any]], bool]:
    def get(instance: dict[str, Any]) -> Any:
        if field.startswith("labels."):
            return (instance.get("labels") or {}).get(field.removeprefix("labels."))
        return instance.get(field)

    if op == "=":
        return lambda instance: get(instance) == value
    return lambda instance: get(instance) != value


class WireHandler(BaseHTTPRequestHandler):
    """Serves `state.handle(method, path, query, body)` as GCE's JSON over HTTP/1.1."""

    state: Any  # the FakeGCE
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _serve(self, method: str) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
            status, answer = 200, self.state.handle(method, url.path, query, body)
        except GceError as error:
            status, answer = error.status, error.body()
        except (ValueError, KeyError, TypeError) as error:
            status, answer = 400, GceError(400, "invalid", f"Invalid request: {error}").body()
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")
