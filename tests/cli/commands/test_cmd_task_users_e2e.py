"""Issue 14's token theft, end to end: a live master, a real agent process run as root (process
runtime), our `det`, two users. The finding: as a non-admin, `det cmd run --config
resources.slots=0 sh -c 'for f in /proc/[0-9]*/environ; do tr "\\000" "\\n" <$f | grep -E
"^DET_(SESSION_TOKEN|USER)="; done'` printed another user's trial's DET_SESSION_TOKEN, since every
task ran as the agent's user, root.

Now alice (linked to uid 61001, which has no passwd entry) runs a trial with our harness and a
command, bob (unlinked: his own default uid) runs the same loop: it finds no environment but
its own, cannot open alice's run dir, and alice's trial completes with its metrics and
checkpoints, written as her uid into the master's shared_fs storage.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from tests.cli.commands.conftest import StartMaster, eventually, ok
from tests.cli.commands.test_cmd_e2e import agent_process as agent_process
from tests.cli.commands.test_cmd_e2e import start_agent
from tests.conftest import PASSWORD
from tests.support.live_master import LiveMaster

REPO = Path(__file__).resolve().parents[3]
WORKLOAD = REPO / "tests" / "e2e" / "workload"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="starting tasks as other users needs root"),
]

ALICE_UID = 61001
THEFT = (
    'echo "OWN=$DET_SESSION_TOKEN"; '
    'for f in /proc/[0-9]*/environ; do tr "\\000" "\\n" <$f | '
    'grep -E "^DET_(SESSION_TOKEN|USER)="; done; '
    'cat "$VICTIM_FILE" >/dev/null 2>&1 && echo "READ victim" || echo "REFUSED victim"; '
    "exit 0"
)


async def det_as(m: LiveMaster, user: str, *args: str) -> Result:
    env = {"DET_MASTER": m.url, "DET_USER": user, "DET_PASS": PASSWORD}
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env=env)


async def new_user(m: LiveMaster, name: str) -> int:
    body = {"user": {"username": name, "active": True}, "password": PASSWORD}
    return int((await m.post("/api/v1/users", body))["user"]["id"])


def steps_experiment(tmp_path: Path) -> Path:
    config = {
        "name": "alice-steps",
        "entrypoint": "python3 steps.py",
        "hyperparameters": {"steps": 40, "step_s": 0.5, "ckpt_every": 20},
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 40}},
        "resources": {"slots_per_trial": 1},
        "max_restarts": 0,
    }
    path = tmp_path / "alice.yaml"
    path.write_text(json.dumps(config))
    return path


async def running_trial(m: LiveMaster, experiment_id: int) -> tuple[dict[str, Any], str]:
    """The experiment's trial once it runs, and its allocation."""

    async def placed() -> tuple[dict[str, Any], str] | None:
        trials = (await m.get(f"/api/v1/experiments/{experiment_id}/trials"))["trials"]
        tasks = (await m.get("/api/v1/tasks"))["allocationIdToSummary"]
        for allocation, summary in tasks.items():
            if trials and summary["taskId"] == trials[0]["taskId"]:
                return trials[0], allocation
        return None

    return await eventually(placed, timeout=60)


async def test_a_users_task_cannot_read_another_users_tokens(
    start_master: StartMaster, agent_process: list[asyncio.subprocess.Process], tmp_path: Path
) -> None:
    m = await start_master()
    work_dir = tmp_path / "agent"
    await start_agent(m, agent_process, work_dir)
    alice_id = await new_user(m, "alice")
    await new_user(m, "bob")
    link = {"agentUid": ALICE_UID, "agentGid": ALICE_UID, "agentUser": "alice"}
    ok(
        await det_as(
            m, "admin", "user", "link-with-agent-user", "alice",
            *("--agent-uid", str(ALICE_UID), "--agent-gid", str(ALICE_UID)),
            *("--agent-user", link["agentUser"], "--agent-group", "alice"),
        )
    )  # fmt: skip
    assert (await m.get(f"/api/v1/users/{alice_id}"))["user"]["agentUserGroup"]["agentUid"] == (
        ALICE_UID
    )

    # Alice: a trial (our harness, Core API) and a command, both holding her tokens.
    out = ok(
        await det_as(
            m, "alice", "experiment", "create", str(steps_experiment(tmp_path)), str(WORKLOAD)
        )
    )
    experiment_id = int(re.search(r"experiment (\d+)", out, re.IGNORECASE).group(1))  # type: ignore[union-attr]
    sleeper = ok(
        await det_as(
            m, "alice", "cmd", "run", "-d", "--config", "resources.slots=0", "sleep", "300"
        )
    ).strip()
    trial, trial_alloc = await running_trial(m, experiment_id)

    async def running() -> bool:
        return (await m.get(f"/api/v1/commands/{sleeper}"))["command"]["state"] == "STATE_RUNNING"

    await eventually(running, timeout=60)
    victim_file = work_dir / "runs" / f"{trial_alloc}-0" / "info" / "trial.json"
    assert victim_file.exists()  # root (the test) reads it; bob must not

    # Bob: Issue 14's loop over every process's environment.
    result = await det_as(
        m, "bob", "cmd", "run", "--config", "resources.slots=0",
        "--config", f"environment.environment_variables=[VICTIM_FILE={victim_file}]",
        "sh", "-c", THEFT,
    )  # fmt: skip
    seen = ok(result).splitlines()
    own = next(line.removeprefix("OWN=") for line in seen if line.startswith("OWN="))
    tokens = {line.split("=", 1)[1] for line in seen if line.startswith("DET_SESSION_TOKEN=")}
    users = {line.split("=", 1)[1] for line in seen if line.startswith("DET_USER=")}
    assert own and tokens == {own}, seen  # its own processes only: none of alice's, nor root's
    assert users <= {"bob"}, seen
    assert "REFUSED victim" in seen, seen

    # Alice's trial completes, with its metrics and checkpoints written as her uid.
    async def completed() -> dict[str, Any] | None:
        t = (await m.get(f"/api/v1/trials/{trial['id']}"))["trial"]
        assert t["state"] not in ("STATE_ERROR", "STATE_CANCELED"), t
        return t if t["state"] == "STATE_COMPLETED" else None

    done = await eventually(completed, timeout=120)
    workloads = await m.get(f"/api/v1/trials/{trial['id']}/workloads", params={"limit": 1000})
    steps = [
        int(w["training"]["totalBatches"]) for w in workloads["workloads"] if w.get("training")
    ]
    assert steps == list(range(1, 41)) and done["latestTraining"]["metrics"]["avgMetrics"]
    checkpoints = tmp_path / "data" / "checkpoints"
    written = [p for p in checkpoints.rglob("state") if p.is_file()]
    assert len(written) == 2 and {p.stat().st_uid for p in written} == {ALICE_UID}
    ok(await det_as(m, "alice", "cmd", "kill", sleeper))
