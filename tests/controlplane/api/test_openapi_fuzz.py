"""Schemathesis against the real master: no bad input may ever get a 5xx.

The app runs under uvicorn in a thread on a free 127.0.0.1 port (real HTTP, real body limits),
on SQLite and on PostgreSQL. Schemathesis loads the OpenAPI document the app serves and runs its
engine (what `st run` runs) over every operation: the examples, coverage (boundary and
schema-violating values) and fuzzing phases, a bounded number of cases each, sent as an admin.
Checks: no server error, and documented responses (the 200 body, and the one error body on 4xx)
match their schemas.

One experiment (hence trial 1 and its task) and one template exist first, so the small ids and
names the generator favours reach real rows and not only the 404 path.

(`schema.parametrize()` / `from_fixture` would give one pytest item per operation, but
schemathesis 4.32's pytest plugin does not run under pytest 9.)
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import schemathesis
import uvicorn
from schemathesis.config import HealthCheck
from schemathesis.engine import events, from_schema

from controlplane.api.proxy_front import http_protocol
from controlplane.app import create_app
from controlplane.services.auth import client_hash
from tests.conftest import PASSWORD, make_settings
from tests.controlplane.api.test_smoke_flow import CONFIG, files

pytestmark = pytest.mark.slow

# Litestar serves the document at `OpenAPIConfig(path=...)` + "/openapi.json".
OPENAPI_PATH = "/api/v1/openapi/openapi.json"
MAX_EXAMPLES = 15  # fuzzing cases per operation; with coverage about 60 s per database
FUZZ_ADMIN = "fuzz-admin"
CHECKS = ["not_a_server_error", "response_schema_conformance"]
SEED_ENV = "RESOLUTE_FUZZ_SEED"


@contextmanager
def _serve(db_url: str, data_dir: Path) -> Iterator[str]:
    """The real app under uvicorn in a daemon thread; yields its base URL, stops it after."""
    settings = make_settings(db_url, data_dir)
    app = create_app(settings, announce=lambda _: None)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # The master's own listening protocol: every connection starts in the proxy's front.
    http = http_protocol(app, settings.http.proxy_front)
    server = uvicorn.Server(uvicorn.Config(app, http=http, log_level="warning", lifespan="on"))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the master did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


def _login(client: httpx.Client, username: str) -> dict[str, str]:
    body = {"username": username, "password": client_hash(PASSWORD), "isHashed": True}
    r = client.post("/api/v1/auth/login", json=body)
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['token']}"}


class Run:
    """What the test needs besides the case: the tokens and who the fuzzing admin is."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        with httpx.Client(base_url=base_url, timeout=30) as c:
            admin = _login(c, "admin")
            # A dedicated admin runs the fuzz, so the generated ids (1, 2, …) that change users
            # hit the built-in users and the fuzzer cannot lock itself out.
            r = c.post(
                "/api/v1/users",
                json={"user": {"username": FUZZ_ADMIN, "admin": True}, "password": PASSWORD},
                headers=admin,
            )
            assert r.status_code == 200, r.text
            self.user_id: int = r.json()["user"]["id"]
            self.headers = _login(c, FUZZ_ADMIN)
            self.logout_headers = _login(c, FUZZ_ADMIN)  # spent by the logout operation
            r = c.post(
                "/api/v1/experiments",
                json={"config": CONFIG, "modelDefinition": files(), "activate": True},
                headers=admin,
            )
            assert r.status_code == 200, r.text
            r = c.post("/api/v1/templates/fuzz", json={"config": {"a": 1}}, headers=admin)
            assert r.status_code == 200, r.text
            # The metric streams send until their experiments end, as Determined's: they are
            # fuzzed on an ended experiment, so that every case's response ends.
            r = c.post(
                "/api/v1/experiments", json={"config": CONFIG, "activate": False}, headers=admin
            )
            assert r.status_code == 200, r.text
            self.ended: int = r.json()["experiment"]["id"]
            r = c.post(f"/api/v1/experiments/{self.ended}/kill", headers=admin)
            assert r.status_code == 200, r.text

    def headers_for(self, case: schemathesis.Case) -> dict[str, str]:
        if case.operation.path == "/api/v1/auth/logout":
            return self.logout_headers  # never revoke the token the run itself uses
        return self.headers


def _load(run: Run) -> schemathesis.BaseSchema:
    schema = schemathesis.openapi.from_url(run.base_url + OPENAPI_PATH)
    # Hypothesis's health checks judge the generator, not the server: a strict path pattern
    # (usernames) or a loaded machine trips them at random seeds (CI saw it).
    schema.config.update(
        base_url=run.base_url,
        request_timeout=30,
        workers=1,
        suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    )
    seed = os.environ.get(SEED_ENV)
    if seed:  # a failure prints its seed: this replays that run
        schema.config.seed = int(seed)
    schema.config.generation.update(max_examples=MAX_EXAMPLES, database="none")
    schema.config.checks.update(included_check_names=CHECKS)
    schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])

    @schema.hook
    def map_case(context: schemathesis.HookContext, case: schemathesis.Case) -> schemathesis.Case:
        query = FIXED_QUERY.get(case.operation.label)
        if query:
            case.query = {**(case.query or {}), **query}
        if "/metrics-stream/" in case.operation.path:
            if "experiment_id" in (case.path_parameters or {}):
                case.path_parameters["experiment_id"] = run.ended
            if "ids" in (case.query or {}):
                case.query["ids"] = [run.ended]
        if (case.path_parameters or {}).get("user_id") == run.user_id:
            case.path_parameters["user_id"] = 2  # the fuzzer keeps its own password and session
        case.headers = {**(case.headers or {}), **run.headers_for(case)}
        return case

    return schema


@pytest.fixture
def live(db_url: str, tmp_path: Path) -> Iterator[Run]:
    """A served master on each database of conftest's `db_url` (SQLite, PostgreSQL)."""
    with _serve(db_url, tmp_path) as url:
        yield Run(url)


# Pinned so that no case holds the connection open: `follow` streams until the task ends and the
# preemption long poll waits up to `timeoutSeconds` (at most 3600) by design.
FIXED_QUERY = {
    "GET /api/v1/trials/{trial_id}/logs": {"follow": "false"},
    "GET /api/v1/tasks/{task_id}/logs": {"follow": "false"},
    "GET /api/v1/trials/{trial_id}/logs/fields": {"follow": "false"},
    "GET /api/v1/tasks/{task_id}/logs/fields": {"follow": "false"},
    "GET /api/v1/master/logs": {"follow": "false"},
    "GET /api/v1/allocations/{allocation_id}/signals/preemption": {
        "timeout_seconds": "0",
        "timeoutSeconds": "0",
    },
}


@pytest.mark.timeout(900)  # ~80 operations; a loaded 2-CPU machine takes minutes
def test_no_server_errors(live: Run) -> None:
    schema = _load(live)
    problems: list[str] = []
    operations: set[str] = set()
    for event in from_schema(schema).execute():
        if isinstance(event, events.FatalError):
            raise event.exception
        if isinstance(event, events.NonFatalError):  # e.g. a response cut off mid-stream
            problems.append(f"--- {event.label}: {event.info.title}\n{event.info.message}")
        if isinstance(event, events.ScenarioFinished):
            operations.add(event.recorder.label)
            for checks in event.recorder.checks.values():
                problems.extend(
                    f"--- {event.recorder.label}: {check.failure_info.failure.title}\n"
                    f"{check.failure_info.failure.message}\n{check.failure_info.code_sample}"
                    for check in checks
                    if check.failure_info is not None
                )
    assert len(operations) > 40, f"only {len(operations)} operations were tested"
    unique = sorted(set(problems))
    assert not unique, (
        f"seed {schema.config.seed} (replay: {SEED_ENV}={schema.config.seed}): "
        f"{len(unique)} problems\n" + "\n".join(unique)
    )
