"""An in-memory stand-in for the master, served through `httpx.MockTransport`.

Only what the CLI unit tests need: canned replies per (method, path), a login endpoint that
checks the client-side password hash, bearer-token checks, and a record of every request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from typer.testing import CliRunner, Result

from cli.auth import hash_password
from cli.main import app
from cli.session import GlobalOptions

Reply = Any  # a JSON-able body, an httpx.Response, or a callable(request) -> either

MASTER = "http://127.0.0.1:8080"


def error_body(code: int, message: str) -> dict[str, Any]:
    return {"code": code, "message": message, "error": {"error": message}, "details": []}


class FakeMaster:
    def __init__(self, users: dict[str, str] | None = None) -> None:
        self.passwords = {name: hash_password(pw) for name, pw in (users or {}).items()}
        self.tokens: dict[str, str] = {}
        self.routes: dict[tuple[str, str], Reply] = {}
        self.requests: list[httpx.Request] = []
        self.sleeps: list[float] = []  # what the CLI would have slept, instead of sleeping

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def add(self, method: str, path: str, reply: Reply) -> None:
        self.routes[(method.upper(), path)] = reply

    def calls(self, method: str, path: str) -> list[httpx.Request]:
        return [r for r in self.requests if r.method == method and r.url.path == path]

    def json_bodies(self, method: str, path: str) -> list[Any]:
        return [json.loads(r.content) if r.content else None for r in self.calls(method, path)]

    def _login(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        user = body["username"]
        if self.passwords.get(user) != body["password"] or body.get("isHashed") is not True:
            return httpx.Response(403, json=error_body(7, "invalid credentials"))
        token = f"token-{user}-{len(self.tokens)}"
        self.tokens[token] = user
        return httpx.Response(
            200, json={"token": token, "user": {"username": user, "admin": True, "active": True}}
        )

    def _caller(self, request: httpx.Request) -> str | None:
        header = request.headers.get("Authorization", "")
        return self.tokens.get(header.removeprefix("Bearer "))

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if (request.method, path) == ("POST", "/api/v1/auth/login"):
            return self._login(request)
        if path.startswith("/api/") and self._caller(request) is None:
            return httpx.Response(401, json=error_body(16, "unauthenticated"))
        if (request.method, path) == ("GET", "/api/v1/me") and (request.method, path) not in (
            self.routes
        ):
            user = self._caller(request)
            return httpx.Response(200, json={"user": {"id": 1, "username": user}})
        reply = self.routes.get((request.method, path))
        if reply is None:
            return httpx.Response(404, json=error_body(5, f"no route {request.method} {path}"))
        if isinstance(reply, Callable):  # type: ignore[arg-type]
            reply = reply(request)
        if isinstance(reply, httpx.Response):
            return reply
        return httpx.Response(200, json=reply)


def run_det(
    master: FakeMaster,
    *args: str,
    input: str | None = None,
    env: dict[str, str] | None = None,
) -> Result:
    """Invoke `det -m MASTER ARGS...` in-process against the fake master."""
    return CliRunner().invoke(
        app,
        ["-m", MASTER, *args],
        input=input,
        env=env,
        obj=GlobalOptions(transport=master.transport, sleep=master.sleeps.append),
    )


def logged_in(master: FakeMaster, user: str = "admin", password: str = "secret") -> None:
    """Log in through the CLI so that later invocations use the cached token."""
    result = run_det(master, "user", "login", user, input=password + "\n")
    assert result.exit_code == 0, result.output


def ndjson(*entries: dict[str, Any]) -> httpx.Response:
    text = "".join(json.dumps(e) + "\n" for e in entries)
    return httpx.Response(200, text=text, headers={"Content-Type": "application/x-ndjson"})


def paged(key: str, items: list[Any]) -> Callable[[httpx.Request], dict[str, Any]]:
    """A list endpoint honouring offset/limit with grpc-gateway style pagination."""

    def reply(request: httpx.Request) -> dict[str, Any]:
        offset = int(request.url.params.get("offset", 0))
        limit = int(request.url.params.get("limit", 0)) or len(items)
        page = items[offset : offset + limit]
        end = offset + len(page)
        pagination = {"offset": offset, "limit": limit, "startIndex": offset}
        return {key: page, "pagination": {**pagination, "endIndex": end, "total": len(items)}}

    return reply
