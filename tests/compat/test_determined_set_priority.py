"""The real `det` 0.38.1's `det cmd|notebook|shell|tensorboard set priority ID N` against our
master: it prints what it set (it prints "Skipping: ..." and exits 0 when the master refuses, so
the output and the master's config are what tell) and the task's config shows the priority."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.compat.conftest import RunningMaster, run
from tests.compat.test_determined_cli import CONFIG, Det

pytestmark = [pytest.mark.compat, pytest.mark.slow]

NAMES = {
    "cmd": "commands",
    "notebook": "notebooks",
    "shell": "shells",
    "tensorboard": "tensorboards",
}
SHOWN = {"cmd": "command", "notebook": "notebook", "shell": "shell", "tensorboard": "tensorboard"}


@pytest.fixture(scope="module")
def det(det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory):
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


def _queued(http: httpx.Client, plural: str) -> str:
    body: dict[str, Any] = {"config": {"resources": {"slots": 0}}}
    if plural == "commands":
        body["config"]["entrypoint"] = ["true"]
    if plural == "tensorboards":
        exp = http.post("/api/v1/experiments", json={"config": CONFIG, "activate": False})
        assert exp.status_code == 200, exp.text
        body["experimentIds"] = [exp.json()["experiment"]["id"]]
    r = http.post(f"/api/v1/{plural}", json=body)
    assert r.status_code == 200, r.text
    return str(r.json()[plural.removesuffix("s")]["id"])


@pytest.mark.parametrize("noun", list(NAMES))
async def test_set_priority(
    det: Det, running_master: RunningMaster, admin: dict[str, str], noun: str
) -> None:
    plural = NAMES[noun]
    with httpx.Client(base_url=running_master.url, headers=admin, timeout=30) as http:
        task_id = _queued(http, plural)
        _, out = await run(det, noun, "set", "priority", task_id, "13")
        assert f"Set priority of {SHOWN[noun]} {task_id} to 13" in out, out
        config = http.get(f"/api/v1/{plural}/{task_id}").json()["config"]
        assert config["resources"]["priority"] == 13
        _, out = await run(det, noun, "set", "priority", task_id, "0")
        assert "Skipping" in out and "between 1 and 99" in out, out
        http.post(f"/api/v1/{plural}/{task_id}/kill")
