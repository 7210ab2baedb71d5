"""Input the OpenAPI fuzzing never sends, on every route: 4xx, never 5xx.

The schema-driven fuzz (tests/controlplane/api/test_openapi_fuzz.py) generates what the schema
describes. This sends what it does not: JSON nested thousands of levels deep, bytes that are not
UTF-8, strings of megabytes and numbers of hundreds of digits, in every path parameter, every
query parameter, as the whole body, and as each top-level field of each request body.

Every operation of the served OpenAPI document is covered (a test checks it), against a live
master on each database whose ids name real rows, so the values reach the handlers instead of
stopping at a 404. Where the hostile value is something the route reads (a path or query
parameter, a field of its body) the answer must be a 4xx; where the route reads no body, the
body may be ignored, but must not give a 5xx either.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import add_agent, experiment_yaml
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, StartMaster, eventually

OPENAPI_PATH = "/api/v1/openapi/openapi.json"
HUGE_STRING = "x" * 1_000_000
HUGE_DIGITS = "9" * 400


def _deep(levels: int, leaf: str = "1") -> str:
    return '{"a": ' * levels + leaf + "}" * levels


# What goes in place of a whole body (raw bytes, sent as application/json): bodies no route
# can decode, then bodies whose one field is unknown to every route (so ignored there).
UNDECODABLE: dict[str, bytes] = {
    "deep array": b"[" * 100_000 + b"]" * 100_000,
    "deep object": _deep(5_000).encode(),
    "unclosed deep array": b"[" * 100_000,
    "invalid UTF-8": b'{"a": "\xff\xfe", "\xc3": 1}',
}
UNKNOWN_FIELD: dict[str, bytes] = {
    "huge string": json.dumps({"a": HUGE_STRING}).encode(),
    "huge number": ('{"a": ' + HUGE_DIGITS + "}").encode(),
    "huge float": b'{"a": 1e999999}',
    "huge negative": ('{"a": -' + HUGE_DIGITS + "}").encode(),
}

# What goes in place of one top-level field of a body (raw JSON text of the value).
FIELD_VALUES: dict[str, bytes] = {
    "deep": _deep(150).encode(),
    "invalid UTF-8": b'"\xff\xfe"',
    "huge string": json.dumps(HUGE_STRING).encode(),
    "huge number": HUGE_DIGITS.encode(),
    "huge negative": b"-" + HUGE_DIGITS.encode(),
    "huge float": b"1e999",
}

# Path parameters that are free text a user chooses, not the name of something that must exist.
FREE_TEXT = {"label", "key"}

# What goes in place of a path or query parameter (already percent-encoded).
PARAM_VALUES: dict[str, str] = {
    "huge number": HUGE_DIGITS,
    "huge negative": "-" + HUGE_DIGITS,
    "huge float": "1e999",
    "huge string": "y" * 6_000,
    "invalid UTF-8": "%FF%FE",
    "NUL": "a%00b",
    "traversal": quote("../../etc/passwd", safe=""),
}


@dataclass(frozen=True)
class Probe:
    label: str
    method: str
    path: str
    query: str = ""
    body: bytes | None = None
    strict: bool = True  # a 4xx is due; else anything below 500 will do


@dataclass
class Fixture:
    """Real rows for path parameters, and the fuzzing admin's headers."""

    path_values: dict[str, str]
    headers: dict[str, str]


def _schema_of(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref:
        return doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
    for option in schema.get("oneOf", []):
        if "$ref" in option:
            return _schema_of(doc, option)
    return schema


def _is_numeric(doc: dict[str, Any], schema: dict[str, Any]) -> bool:
    schema = _schema_of(doc, schema)
    if schema.get("type") == "array":
        schema = _schema_of(doc, schema.get("items", {}))
    types = [schema.get("type")] + [o.get("type") for o in schema.get("oneOf", [])]
    return bool({"integer", "number", "boolean"} & set(types))


def _body_fields(doc: dict[str, Any], op: dict[str, Any]) -> list[str] | None:
    """The top-level fields of the operation's JSON body; None when it takes no body."""
    body = op.get("requestBody", {}).get("content", {}).get("application/json")
    if body is None:
        return None
    return sorted(_schema_of(doc, body.get("schema", {})).get("properties", {}))


def _probes(doc: dict[str, Any], values: dict[str, str]) -> Iterator[Probe]:
    for template, ops in doc["paths"].items():
        for method, op in ops.items():
            label = f"{method.upper()} {template}"
            params = op.get("parameters", [])
            names = [p["name"] for p in params if p["in"] == "path"]
            real = {n: quote(values.get(n, "1"), safe="") for n in names}
            path = template.format(**real)
            for name in names:
                for kind, bad in PARAM_VALUES.items():
                    # A free-text parameter that names a new value (a label, a metadata key)
                    # may well be "1e999" or "../x": those only must not fail; NUL and an
                    # oversized one are refused.
                    strict = name not in FREE_TEXT or kind in ("NUL", "huge string")
                    yield Probe(
                        f"{label} {name}={kind}",
                        method,
                        template.format(**{**real, name: bad}),
                        strict=strict,
                    )
            for p in params:
                if p["in"] != "query":
                    continue
                # A free-text filter may match nothing (200); a number or flag must be refused.
                strict = _is_numeric(doc, p.get("schema", {}))
                for kind, bad in PARAM_VALUES.items():
                    query = f"{quote(p['name'])}={bad}"
                    yield Probe(f"{label} ?{p['name']}={kind}", method, path, query, strict=strict)
            if "rendezvous" in template:
                continue  # with real ids it waits for the other ranks, by design
            fields = _body_fields(doc, op)
            # A route that reads no body may ignore one; it must not fail on it either.
            for kind, body in UNDECODABLE.items():
                yield Probe(
                    f"{label} body={kind}", method, path, body=body, strict=fields is not None
                )
            for kind, body in UNKNOWN_FIELD.items():
                yield Probe(f"{label} body={kind}", method, path, body=body, strict=False)
            for name in fields or []:
                for kind, value in FIELD_VALUES.items():
                    body = b'{"' + name.encode() + b'": ' + value + b"}"
                    yield Probe(f"{label} body.{name}={kind}", method, path, body=body)


async def _fixture(m: LiveMaster, agents: list[FakeAgent]) -> Fixture:
    await add_agent(m, agents, "a1", 4)
    await m.post(
        "/api/v1/users", {"user": {"username": "fuzzer", "admin": True}, "password": PASSWORD}
    )
    headers = await m.login("fuzzer", PASSWORD)
    exp = await m.post("/api/v1/experiments", {"config": experiment_yaml("e"), "activate": True})
    trial = (await m.get(f"/api/v1/experiments/{exp['experiment']['id']}/trials"))["trials"][0]

    async def allocation() -> str | None:
        allocations = (await m.get(f"/api/v1/tasks/{trial['taskId']}"))["task"]["allocations"]
        return allocations[0]["allocationId"] if allocations else None

    alloc = await eventually(allocation, timeout=10)
    ckpt = str(uuid.uuid4())
    await m.post(
        "/api/v1/checkpoints",
        {"uuid": ckpt, "resources": {"a": 1}, "training": {"trialId": trial["id"]}},
    )
    await m.post("/api/v1/templates/fuzz", {"config": {"a": 1}})
    await m.post("/api/v1/models", {"name": "fuzz"})
    await m.post("/api/v1/models/fuzz/versions", {"checkpointUuid": ckpt})
    command = await m.post("/api/v1/commands", {"config": {"entrypoint": ["true"]}})
    values = {
        "experiment_id": str(exp["experiment"]["id"]),
        "trial_id": str(trial["id"]),
        "run_id": str(trial["id"]),
        "task_id": trial["taskId"],
        "allocation_id": alloc,
        "resources_id": "0",
        "checkpoint_uuid": ckpt,
        "template_name": "fuzz",
        "command_id": command["command"]["id"],
        "agent_id": "a1",
        "pool_name": "default",
        "user_id": "2",  # determined: the fuzzer keeps its own password and session
        "username": "determined",
        "workspace_id": "1",
        "project_id": "1",
        "model_name": "fuzz",
        "version": "1",
    }
    return Fixture(path_values=values, headers=headers)


async def _send(m: LiveMaster, client: httpx.AsyncClient, fx: Fixture, probe: Probe) -> int:
    headers = dict(fx.headers)
    if probe.path == "/api/v1/auth/logout":
        headers = await m.login("fuzzer", PASSWORD)  # a token of its own to spend
    if probe.body is not None:
        headers["content-type"] = "application/json"
    url = probe.path + (f"?{probe.query}" if probe.query else "")
    r = await client.request(probe.method.upper(), url, content=probe.body, headers=headers)
    return r.status_code


@pytest.mark.slow
@pytest.mark.timeout(900)  # a few thousand requests, megabytes each at times
async def test_hostile_input_on_every_route_is_a_4xx(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    doc = (await m.http.get(OPENAPI_PATH)).json()
    fx = await _fixture(m, agents)
    probes = list(_probes(doc, fx.path_values))
    covered = {" ".join(p.label.split(" ")[:2]) for p in probes}
    assert covered == {
        f"{verb.upper()} {path}" for path, ops in doc["paths"].items() for verb in ops
    }
    wrong: list[str] = []
    # The probes go to the served app in process (ASGI): a loopback round trip costs ~45 ms
    # here, whatever the route, and there are thousands. The body limit is the app's own.
    transport = httpx.ASGITransport(app=m.app)
    async with httpx.AsyncClient(transport=transport, base_url=m.url, timeout=60) as client:
        for probe in probes:
            status = await _send(m, client, fx, probe)
            if status >= 500 or (probe.strict and not 400 <= status < 500):
                wrong.append(f"{probe.label}: HTTP {status}")
    assert not wrong, f"{len(wrong)} of {len(probes)} probes:\n" + "\n".join(wrong)
