"""Every free-text field the master stores has a documented size limit (controlplane.domain.limits,
docs/operations.md): over it, a 400 that names the field and the limit; a log line is cut with a
marker instead. A 10 MB description used to make every `GET /api/v1/experiments` carry ~30 MB.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from controlplane.domain import limits
from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error, new_trial
from tests.controlplane.api.test_smoke_flow import CONFIG

TEN_MB = "d" * 10_000_000


def yaml_with(extra: str) -> str:
    return CONFIG.replace("name: smoke\n", f"name: smoke\n{extra}\n")


def big_json(limit: int) -> dict[str, str]:
    return {"blob": "b" * limit}  # a little over `limit` bytes once serialized


def big_env(limit: int) -> dict[str, list[str]]:
    return {"environment_variables": ["B=" + "b" * limit]}


def json_config() -> dict[str, Any]:
    return {
        "entrypoint": "python3 train.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": 10},
    }


@dataclass(frozen=True)
class Case:
    what: str
    method: str
    path: str  # {exp} and {trial} are filled in
    body: Any
    field: str
    limit: int


CASES = [
    Case("experiment name", "PATCH", "/api/v1/experiments/{exp}", {"name": "n" * 513}, "name", 512),
    Case(
        "experiment description",
        "PATCH",
        "/api/v1/experiments/{exp}",
        {"description": "d" * (limits.DESCRIPTION_CHARS + 1)},
        "description",
        limits.DESCRIPTION_CHARS,
    ),
    Case(
        "experiment notes",
        "PATCH",
        "/api/v1/experiments/{exp}",
        {"notes": "n" * (limits.NOTES_CHARS + 1)},
        "notes",
        limits.NOTES_CHARS,
    ),
    Case(
        "number of labels",
        "PATCH",
        "/api/v1/experiments/{exp}",
        {"labels": [f"l{i}" for i in range(limits.LABELS + 1)]},
        "labels",
        limits.LABELS,
    ),
    Case(
        "one label",
        "PATCH",
        "/api/v1/experiments/{exp}",
        {"labels": ["l" * 256]},
        "labels",
        255,
    ),
    Case(
        "description in the config",
        "POST",
        "/api/v1/experiments",
        {"config": yaml_with(f"description: {'d' * (limits.DESCRIPTION_CHARS + 1)}")},
        "description",
        limits.DESCRIPTION_CHARS,
    ),
    Case(
        "label in the config",
        "POST",
        "/api/v1/experiments",
        {"config": yaml_with(f"labels: [{'l' * 256}]")},
        "labels",
        255,
    ),
    Case(
        "config as a JSON object",
        "POST",
        "/api/v1/experiments",
        {"config": {**json_config(), "hyperparameters": big_json(limits.CONFIG_BYTES)}},
        "config",
        limits.CONFIG_BYTES,
    ),
    Case(
        "template config",
        "POST",
        "/api/v1/templates/big",
        {"config": big_json(limits.CONFIG_BYTES)},
        "config",
        limits.CONFIG_BYTES,
    ),
    Case(
        "template config, replaced",
        "PATCH",
        "/api/v1/templates/small",
        big_json(limits.CONFIG_BYTES),
        "config",
        limits.CONFIG_BYTES,
    ),
    Case(
        "username",
        "POST",
        "/api/v1/users",
        {"user": {"username": "u" * 256}, "password": "Pw-123456789"},
        "username",
        255,
    ),
    Case(
        "display name",
        "PATCH",
        "/api/v1/users/2",
        {"displayName": "D" * 256},
        "displayName",
        255,
    ),
    Case(
        "checkpoint metadata",
        "POST",
        "/api/v1/checkpoints",
        {
            "uuid": str(uuid.uuid4()),
            "metadata": big_json(limits.CHECKPOINT_METADATA_BYTES),
            "training": {"trialId": "{trial}"},
        },
        "metadata",
        limits.CHECKPOINT_METADATA_BYTES,
    ),
    Case(
        "checkpoint resources",
        "POST",
        "/api/v1/checkpoints",
        {
            "uuid": str(uuid.uuid4()),
            "resources": {f"f{i}": 1 for i in range(limits.CHECKPOINT_RESOURCES + 1)},
            "training": {"trialId": "{trial}"},
        },
        "resources",
        limits.CHECKPOINT_RESOURCES,
    ),
    Case(
        "metric name",
        "POST",
        "/api/v1/trials/{trial}/metrics",
        {
            "group": "training",
            "metrics": {
                "stepsCompleted": 1,
                "metrics": {"avgMetrics": {"m" * (limits.METRIC_NAME_CHARS + 1): 1}},
            },
        },
        "metric name",
        limits.METRIC_NAME_CHARS,
    ),
    Case(
        "command description",
        "POST",
        "/api/v1/commands",
        {
            "config": {
                "entrypoint": ["true"],
                "description": "d" * (limits.DESCRIPTION_CHARS + 1),
            }
        },
        "description",
        limits.DESCRIPTION_CHARS,
    ),
    Case(
        "command config",
        "POST",
        "/api/v1/commands",
        {"config": {"entrypoint": ["true"], "environment": big_env(limits.CONFIG_BYTES)}},
        "config",
        limits.CONFIG_BYTES,
    ),
    Case(
        "agent id in a disable request",
        "POST",
        "/api/v1/agents/a1/disable",
        {"agentId": "a" * 256},
        "agentId",
        255,
    ),
]


def _fill(value: Any, names: dict[str, Any]) -> Any:
    if isinstance(value, str):
        for key, real in names.items():
            if value == "{" + key + "}":
                return real
        return value.format(**names) if "{" in value and len(value) < 100 else value
    if isinstance(value, dict):
        return {k: _fill(v, names) for k, v in value.items()}
    return value


async def test_each_limit_is_a_400_naming_the_field_and_the_limit(master: Master) -> None:
    trial = await new_trial(master)
    r = await master.client.post(
        "/api/v1/templates/small", json={"config": {"a": 1}}, headers=master.admin
    )
    assert r.status_code == 200, r.text
    names = {"exp": trial["experimentId"], "trial": trial["id"]}
    wrong = []
    for case in CASES:
        body = _fill(case.body, names)
        r = await master.client.request(
            case.method, _fill(case.path, names), json=body, headers=master.admin
        )
        message = (
            r.json().get("message", "")
            if r.headers.get("content-type", "").startswith("application/json")
            else r.text[:200]
        )
        if r.status_code != 400 or case.field not in message or str(case.limit) not in message:
            wrong.append(f"{case.what}: HTTP {r.status_code}: {message[:300]}")
    assert not wrong, "\n".join(wrong)


async def test_a_ten_megabyte_description_never_reaches_the_experiment_list(
    master: Master,
) -> None:
    trial = await new_trial(master)
    r = await master.client.patch(
        f"/api/v1/experiments/{trial['experimentId']}",
        json={"description": TEN_MB},
        headers=master.user,
    )
    assert r.status_code == 400, r.text[:300]
    assert_error(r, 400, f"at most {limits.DESCRIPTION_CHARS}")
    r = await master.client.get("/api/v1/experiments", headers=master.user)
    assert r.status_code == 200 and len(r.content) < 100_000, len(r.content)


async def test_values_at_the_limits_are_kept(master: Master) -> None:
    trial = await new_trial(master)
    exp_path = f"/api/v1/experiments/{trial['experimentId']}"
    body = {
        "description": "d" * limits.DESCRIPTION_CHARS,
        "notes": "n" * limits.NOTES_CHARS,
        "labels": ["l" * 255] + [f"l{i}" for i in range(limits.LABELS - 1)],
    }
    r = await master.client.patch(exp_path, json=body, headers=master.user)
    assert r.status_code == 200, r.text[:300]
    exp = r.json()["experiment"]
    assert (len(exp["description"]), len(exp["notes"]), len(exp["labels"])) == (
        limits.DESCRIPTION_CHARS,
        limits.NOTES_CHARS,
        limits.LABELS,
    )


async def _logs(master: Master, task_id: str) -> list[str]:
    r = await master.client.get(f"/api/v1/tasks/{task_id}/logs", headers=master.user)
    return [json.loads(line)["result"]["log"] for line in r.text.splitlines() if line.strip()]


async def test_long_log_lines_are_cut_with_a_marker(master: Master) -> None:
    trial = await new_trial(master)
    task_id = trial["taskId"]
    lines = ["short", "x" * limits.LOG_LINE_CHARS, "y" * 1_000_000]
    body = {"logs": [{"taskId": task_id, "log": text} for text in lines]}
    r = await master.client.post("/api/v1/task/logs", json=body, headers=master.user)
    assert r.status_code == 200, r.text[:300]
    short, at_limit, cut = await _logs(master, task_id)
    assert short == "short" and at_limit == lines[1]
    kept = cut.index(" [... ")
    assert len(cut) <= limits.LOG_LINE_CHARS and kept > limits.LOG_LINE_CHARS - 100
    assert cut == "y" * kept + limits.log_truncation_marker(1_000_000 - kept)
