"""Bad input gets a 4xx with the one error body, never a 500 (regressions from the API fuzzer).

Each test runs on SQLite and on PostgreSQL: PostgreSQL is the stricter store (int32 columns,
bounded varchars, no NUL in text), so most of these were 500s there before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from litestar.testing import AsyncTestClient
from sqlalchemy.exc import DBAPIError

from controlplane.api.errors import db_handler
from controlplane.app import create_app
from tests.conftest import Master, make_settings
from tests.controlplane.api.test_smoke_flow import CONFIG

INT32_MAX = 2**31 - 1
HUGE = 2**64


def assert_error(r: httpx.Response, status: int, needle: str = "") -> dict[str, Any]:
    """The status, and the body every error has: {code, message, error: {error}, details}."""
    assert r.status_code == status, f"{r.request.method} {r.request.url}: {r.text}"
    body = r.json()
    assert set(body) == {"code", "message", "error", "details"}, body
    assert isinstance(body["code"], int) and body["error"] == {"error": body["message"]}
    assert needle.lower() in body["message"].lower(), body["message"]
    return body


def is_postgres(db_url: str) -> bool:
    return db_url.startswith("postgresql")


async def new_trial(master: Master) -> dict[str, Any]:
    r = await master.client.post(
        "/api/v1/experiments", json={"config": CONFIG}, headers=master.user
    )
    assert r.status_code == 200, r.text
    exp_id = r.json()["experiment"]["id"]
    r = await master.client.get(f"/api/v1/experiments/{exp_id}/trials", headers=master.user)
    return r.json()["trials"][0]


def metrics_report(steps: int, avg: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "group": "validation",
        "metrics": {"stepsCompleted": steps, "metrics": {"avgMetrics": avg}, **extra},
    }


# --- ids, unknown things, auth -------------------------------------------------------------


OUT_OF_RANGE = [
    f"/api/v1/experiments/{INT32_MAX + 1}",
    f"/api/v1/experiments/{HUGE}",
    "/api/v1/experiments/0",
    f"/api/v1/trials/{HUGE}",
    f"/api/v1/users/{HUGE}",
    f"/api/v1/workspaces/{HUGE}",
    f"/api/v1/experiments?offset={HUGE}",
    f"/api/v1/experiments?limit={HUGE}",
    f"/api/v1/experiments?projectId={HUGE}",
    f"/api/v1/experiments?experimentIdFilter.gt={HUGE}",
    f"/api/v1/experiments?userIds={HUGE}",
    f"/api/v1/commands?userIds=1&userIds=-{HUGE}",
    f"/api/v1/commands?workspaceId={HUGE}",
    "/api/v1/agents/..%20bad",
    f"/api/v1/agents/{'a' * 300}",
    "/api/v1/experiments?archived=maybe",
]

UNKNOWN = [
    ("GET", f"/api/v1/experiments/{INT32_MAX}", "experiment"),
    ("GET", f"/api/v1/experiments/{INT32_MAX}/trials", "experiment"),
    ("GET", f"/api/v1/experiments/{INT32_MAX}/checkpoints", "experiment"),
    ("POST", f"/api/v1/experiments/{INT32_MAX}/kill", "experiment"),
    ("GET", f"/api/v1/trials/{INT32_MAX}", "trial"),
    ("GET", f"/api/v1/trials/{INT32_MAX}/logs", "trial"),
    ("GET", "/api/v1/checkpoints/no-such-uuid", "checkpoint"),
    ("GET", "/api/v1/templates/no-such-template", "template"),
    ("DELETE", "/api/v1/templates/no-such-template", "template"),
    ("GET", f"/api/v1/users/{INT32_MAX}", "user"),
    ("GET", "/api/v1/tasks/no-such-task/logs", "task"),
    ("GET", "/api/v1/commands/no-such-command", "command"),
    ("GET", "/api/v1/agents/no-such-agent", "agent"),
    ("POST", "/api/v1/agents/no-such-agent/enable", "agent"),
    ("GET", f"/api/v1/workspaces/{INT32_MAX}", "workspace"),
    ("GET", f"/api/v1/projects/{INT32_MAX}", "project"),
    ("GET", "/api/v1/no-such-endpoint", "no such endpoint"),
]

BAD_TOKENS = [
    {},
    {"Authorization": "Bearer not-a-token"},
    {"Authorization": "Bearer"},
    {"Authorization": "Basic YWRtaW46eA=="},
    {"Authorization": "Bearer " + "x" * 10_000},
    {"grpc-metadata-x-allocation-token": "Bearer not-a-token"},
]


async def test_out_of_range_ids_unknown_things_and_bad_tokens(master: Master) -> None:
    for path in OUT_OF_RANGE:
        assert_error(await master.client.get(path, headers=master.admin), 400)
    for method, path, needle in UNKNOWN:
        r = await master.client.request(method, path, headers=master.admin)
        assert_error(r, 404, needle)
    for headers in BAD_TOKENS:
        assert_error(await master.client.get("/api/v1/experiments", headers=headers), 401)


async def test_non_owner_changing_an_experiment_is_403(master: Master) -> None:
    r = await master.client.post(
        "/api/v1/experiments", json={"config": CONFIG}, headers=master.admin
    )
    exp_id = r.json()["experiment"]["id"]
    r = await master.client.patch(
        f"/api/v1/experiments/{exp_id}", json={"name": "mine"}, headers=master.user
    )
    assert_error(r, 403, "owner")
    r = await master.client.post(f"/api/v1/experiments/{exp_id}/kill", headers=master.user)
    assert_error(r, 403, "owner")


# --- bodies ---------------------------------------------------------------------------------


RAW_BODY = [
    ("POST", "/api/v1/experiments"),
    ("POST", "/api/v1/auth/login"),
    ("PATCH", "/api/v1/templates/t"),  # read the raw body itself: malformed JSON was a 500
    ("POST", "/api/v1/users/2/password"),  # likewise
]

NEEDS_AN_OBJECT = [
    ("POST", "/api/v1/experiments"),
    ("PATCH", "/api/v1/experiments/1"),
    ("POST", "/api/v1/templates/t"),
    ("PATCH", "/api/v1/templates/t"),
    ("POST", "/api/v1/users/2/password"),
    ("POST", "/api/v1/checkpoints"),
    ("POST", "/api/v1/task/logs"),
]


async def test_malformed_missing_or_wrong_type_bodies_are_400(master: Master) -> None:
    headers = {**master.admin, "content-type": "application/json"}
    for method, path in RAW_BODY:
        for content in (b"{", b"\xff\xfe", b"not json", b'{"a": NaN}'):
            r = await master.client.request(method, path, content=content, headers=headers)
            assert_error(r, 400)
    for method, path in NEEDS_AN_OBJECT:
        for body in (None, [], "text", 5, True):
            if body == "text" and path.endswith("/password"):
                continue  # a bare JSON string is this endpoint's wire form
            kwargs: dict[str, Any] = {} if body is None else {"json": body}
            r = await master.client.request(method, path, headers=master.admin, **kwargs)
            assert_error(r, 400)


async def test_set_password_bare_string_and_object_forms(master: Master) -> None:
    url = "/api/v1/users/2/password"
    r = await master.client.post(url, json="Another-Passw0rd", headers=master.admin)
    assert r.status_code == 200, r.text
    await master.login("determined", "Another-Passw0rd")
    r = await master.client.post(url, json={"password": "Third-Passw0rd"}, headers=master.admin)
    assert r.status_code == 200, r.text
    await master.login("determined", "Third-Passw0rd")
    assert_error(await master.client.post(url, json="x" * 5000, headers=master.admin), 400)
    r = await master.client.post(url, json={"password": 5}, headers=master.admin)
    assert_error(r, 400)


async def test_patch_template_takes_the_config_object(master: Master) -> None:
    r = await master.client.post(
        "/api/v1/templates/t", json={"config": {"a": 1}}, headers=master.admin
    )
    assert r.status_code == 200, r.text
    r = await master.client.patch("/api/v1/templates/t", json={"b": 2}, headers=master.admin)
    assert r.status_code == 200 and r.json()["template"]["config"] == {"b": 2}, r.text
    r = await master.client.patch("/api/v1/templates/nope", json={"b": 2}, headers=master.admin)
    assert_error(r, 404, "template")


async def test_oversized_body_is_413(db_url: str, tmp_path: Path) -> None:
    settings = make_settings(db_url, tmp_path, http={"max_request_body_bytes": 4096})
    app = create_app(settings, announce=lambda _: None)
    async with AsyncTestClient(app=app, base_url="http://127.0.0.1") as client:
        body = {"username": "admin", "password": "x" * 8000}
        assert_error(await client.post("/api/v1/auth/login", json=body), 413)


# --- numbers the database cannot hold ------------------------------------------------------


async def test_steps_completed_beyond_int32_is_400(master: Master) -> None:
    t = await new_trial(master)
    url = f"/api/v1/trials/{t['id']}/metrics"
    for steps in (INT32_MAX + 1, 2**62, HUGE):
        r = await master.client.post(
            url, json=metrics_report(steps, {"loss": 1}), headers=master.user
        )
        assert_error(r, 400, "stepsCompleted")
    r = await master.client.post(
        url, json=metrics_report(INT32_MAX, {"loss": 1}), headers=master.user
    )
    assert r.status_code == 200, r.text


async def test_checkpoint_ids_and_steps_beyond_int32_are_400(master: Master) -> None:
    t = await new_trial(master)
    r = await master.client.post(
        "/api/v1/checkpoints",
        json={"uuid": "c1", "training": {"trialId": HUGE}},
        headers=master.user,
    )
    assert_error(r, 400, "trialId")
    for steps in (INT32_MAX + 1, HUGE):
        r = await master.client.post(
            "/api/v1/checkpoints",
            json={
                "uuid": "5d2a3c1e-7b4f-4e6a-9c8d-0f1e2d3c4b5a",
                "training": {"trialId": t["id"]},
                "metadata": {"steps_completed": steps},
            },
            headers=master.user,
        )
        assert_error(r, 400, "steps_completed")


async def test_experiment_resources_beyond_int32_are_400(master: Master) -> None:
    t = await new_trial(master)
    url = f"/api/v1/experiments/{t['experimentId']}"
    for resources in ({"maxSlots": HUGE}, {"priority": HUGE}):
        r = await master.client.patch(url, json={"resources": resources}, headers=master.user)
        assert_error(r, 400)
    assert_error(await master.client.patch(url, json={"id": HUGE}, headers=master.user), 400)


async def test_huge_searcher_metric_is_stored_not_a_500(master: Master) -> None:
    t = await new_trial(master)
    r = await master.client.post(
        f"/api/v1/trials/{t['id']}/metrics",
        json=metrics_report(1, {"loss": 10**400}),
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    r = await master.client.get(f"/api/v1/trials/{t['id']}", headers=master.user)
    assert r.status_code == 200, r.text


# --- timestamps ----------------------------------------------------------------------------


BAD_STAMPS = [
    ("2020-01-01T00:00:00", "timezone"),  # naive: ambiguous, was a 500
    ("0001-01-01T00:00:00+01:00", "out of range"),  # before year 1 in UTC
]

BAD_LOG_FILTERS = [  # (query, also on the task endpoint, which takes only some filters)
    ("timestampBefore=2020-01-01T00:00:00", False),
    ("timestampAfter=0001-01-01T00:00:00%2B01:00", False),
    ("agentIds=a%00", False),
    (f"rankIds={HUGE}", False),
    ("searchText=%00", True),
    ("levels=%00", True),
]


async def test_bad_timestamps_and_log_filters_are_400(master: Master) -> None:
    t = await new_trial(master)
    for stamp, needle in BAD_STAMPS:
        r = await master.client.post(
            f"/api/v1/trials/{t['id']}/metrics",
            json=metrics_report(1, {"loss": 1}, reportTime=stamp),
            headers=master.user,
        )
        assert_error(r, 400, needle)
        r = await master.client.post(
            "/api/v1/task/logs",
            json={"logs": [{"taskId": t["taskId"], "log": "x", "timestamp": stamp}]},
            headers=master.user,
        )
        assert_error(r, 400, needle)
        r = await master.client.post(
            "/api/v1/checkpoints",
            json={"uuid": "c", "training": {"trialId": t["id"]}, "reportTime": stamp},
            headers=master.user,
        )
        assert_error(r, 400, needle)
    # Once a log stream has started, an error can only cut it short: these are checked before.
    for query, task_too in BAD_LOG_FILTERS:
        urls = [f"/api/v1/trials/{t['id']}/logs"]
        if task_too:
            urls.append(f"/api/v1/tasks/{t['taskId']}/logs")
        for url in urls:
            assert_error(await master.client.get(f"{url}?{query}", headers=master.user), 400)


# --- text the database cannot hold ---------------------------------------------------------


async def test_nul_in_a_log_line_is_replaced_not_refused(master: Master) -> None:
    t = await new_trial(master)
    r = await master.client.post(
        "/api/v1/task/logs",
        json={"logs": [{"taskId": t["taskId"], "log": "a\x00b"}]},
        headers=master.user,
    )
    assert r.status_code == 200, r.text
    r = await master.client.get(f"/api/v1/tasks/{t['taskId']}/logs", headers=master.user)
    assert '"log":"a\\ufffdb"' in r.text.replace(" ", ""), r.text


async def test_nul_elsewhere_is_400_on_postgres(master: Master, db_url: str) -> None:
    """PostgreSQL text and JSONB cannot hold NUL; SQLite can, so there it is simply stored."""
    t = await new_trial(master)
    exp = f"/api/v1/experiments/{t['experimentId']}"
    requests: list[tuple[str, str, Any]] = [
        ("PATCH", exp, {"description": "a\x00b"}),
        ("PATCH", exp, {"labels": ["a\x00b"]}),
        ("POST", "/api/v1/templates/nul", {"config": {"a": "\x00"}}),
        ("POST", f"/api/v1/trials/{t['id']}/runner/metadata", {"state": "a\x00"}),
        ("GET", "/api/v1/experiments?name=%00", None),
    ]
    for method, url, body in requests:
        kwargs = {} if body is None else {"json": body}
        r = await master.client.request(method, url, headers=master.user, **kwargs)
        if is_postgres(db_url):
            assert_error(r, 400, "NUL")
        else:
            assert r.status_code == 200, (url, r.text)
    # Unknown names that cannot exist are still a 404 (SQLite) or that 400, never a 500.
    r = await master.client.get("/api/v1/checkpoints/%00", headers=master.user)
    assert_error(r, 400 if is_postgres(db_url) else 404)


def test_database_data_exceptions_map_to_400() -> None:
    class Orig(Exception):
        def __init__(self, message: str, sqlstate: str | None) -> None:
            super().__init__(message)
            self.sqlstate = sqlstate

    def status(orig: Exception) -> tuple[int, str]:
        response = db_handler(None, DBAPIError("SELECT 1", {}, orig))  # type: ignore[arg-type]
        return response.status_code, response.content["message"]  # type: ignore[index]

    assert status(Orig("value too long for type character varying(255)", "22001")) == (
        400,
        "invalid value: value too long for type character varying(255)",
    )
    assert status(Orig('invalid byte sequence for encoding "UTF8": 0x00', "22021"))[0] == 400
    assert status(Orig("unsupported Unicode escape sequence", "22P05"))[0] == 400
    assert status(Orig("duplicate key value", "23505"))[0] == 500  # our bug, not bad input
    assert status(Orig("something", None))[0] == 500


# --- experiment configs --------------------------------------------------------------------

BASE = "name: {name}\nentrypoint: python3 train.py\n"


BAD_CONFIGS = [
    (
        BASE.format(name="n" * 513) + "searcher: {name: single, metric: loss, max_length: 1}",
        "name",
    ),
    (
        BASE.format(name="a")
        + "searcher: {name: single, metric: loss, max_length: 1}\n"
        + "resources: {resource_pool: "
        + "p" * 256
        + "}",
        "resource_pool",
    ),
    (
        BASE.format(name="a")
        + "searcher: {name: single, metric: loss, max_length: 1}\n"
        + f"resources: {{slots_per_trial: {HUGE}}}",
        "slots_per_trial",
    ),
    (
        BASE.format(name="a")
        + f"searcher: {{name: single, metric: loss, max_length: 1}}\nmax_restarts: {HUGE}",
        "max_restarts",
    ),
    (  # 10**8 grid points: this exhausted the master's memory
        BASE.format(name="a")
        + "searcher: {name: grid, metric: loss, max_length: 1}\n"
        + "hyperparameters: {a: {type: int, minval: 0, maxval: 99999999999, count: 99999999}}",
        "grid",
    ),
    (
        BASE.format(name="a")
        + "searcher: {name: random, metric: loss, max_length: 1, max_trials: 99999999,"
        + " max_concurrent_trials: 0}",
        "max_concurrent_trials",
    ),
    (
        BASE.format(name="a")
        + "searcher: {name: random, metric: loss, max_length: 1, max_trials: 2}\n"
        + "hyperparameters: {a: {type: log, minval: 0, maxval: 400, base: 10}}",
        "overflows",
    ),
    (
        BASE.format(name="a")
        + "searcher: {name: grid, metric: loss, max_length: 1}\n"
        + f"hyperparameters: {{a: {{type: int, minval: 0, maxval: {10**400}, count: 3}}}}",
        "maxval",
    ),
]


async def test_configs_the_master_cannot_hold_are_400(master: Master) -> None:
    for config, needle in BAD_CONFIGS:
        r = await master.client.post(
            "/api/v1/experiments", json={"config": config}, headers=master.user
        )
        assert_error(r, 400, needle)


async def test_many_random_trials_with_a_concurrency_limit_are_fine(master: Master) -> None:
    config = (
        BASE.format(name="a")
        + "searcher: {name: random, metric: loss, max_length: 1, max_trials: 99999999,"
        + " max_concurrent_trials: 2}"
    )
    r = await master.client.post(
        "/api/v1/experiments", json={"config": config}, headers=master.user
    )
    assert r.status_code == 200 and r.json()["experiment"]["numTrials"] == 2, r.text


# --- the OpenAPI document ------------------------------------------------------------------


async def test_openapi_documents_the_error_body(master: Master) -> None:
    r = await master.client.get("/api/v1/openapi/openapi.json")
    assert r.status_code == 200
    spec = r.json()
    responses = spec["paths"]["/api/v1/experiments/{experiment_id}"]["patch"]["responses"]
    for status in ("400", "401", "403", "404", "409", "413", "503"):
        schema = responses[status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (status, schema)
    assert set(spec["components"]["schemas"]["ErrorBody"]["required"]) == {
        "code",
        "message",
        "error",
    }


async def test_missing_body_says_a_body_is_required(master: Master) -> None:
    r = await master.client.post("/api/v1/auth/login")
    assert r.status_code == 400 and "a JSON request body is required" in r.json()["message"]
