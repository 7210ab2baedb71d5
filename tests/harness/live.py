"""Helpers for harness tests against a live master: place a trial, run the launcher as a task."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.protocol import StartContainer
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster, eventually

REPO = Path(__file__).resolve().parents[2]


def wire_files(files: dict[str, bytes]) -> list[dict[str, Any]]:
    return [
        {"path": path, "type": 48, "content": base64.b64encode(data).decode(), "mode": 0o644}
        for path, data in sorted(files.items())
    ]


async def place_trial(
    m: LiveMaster, agents: list[FakeAgent], config: str, files: dict[str, bytes]
) -> tuple[dict[str, Any], StartContainer, FakeAgent]:
    """Submit an experiment and return it with the StartContainer a fake agent received."""
    agent = FakeAgent(m.ws_url, f"agent-{len(agents) + 1}", 1)
    agents.append(agent)
    await agent.connect()
    body = {"config": config, "modelDefinition": wire_files(files), "activate": True}
    exp = (await m.post("/api/v1/experiments", body))["experiment"]

    async def started() -> bool:
        return bool(agent.started)

    await eventually(started, timeout=30)
    return exp, next(iter(agent.started.values())), agent


def task_env(m: LiveMaster, start: StartContainer, workdir: Path, **extra: str) -> dict[str, str]:
    """The container's environment as the agent would make it, for a plain process."""
    workdir.mkdir(parents=True, exist_ok=True)  # the runtime creates the run dir
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    env.update(start.spec.environment)
    env.update(
        {
            "DET_MASTER": m.url,
            "DET_AGENT_ID": "agent-1",
            "DET_SLOT_IDS": "[0]",
            "DET_WORKDIR": str(workdir),
            "DET_LOG_WAIT_TIME": "20",
            "PYTHONPATH": str(REPO),
            "PYTHONUNBUFFERED": "1",
            # The process runtime runs tasks with the agent's Python first on PATH (`python3`).
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
    )
    env.update(extra)
    return env


@dataclass
class Ran:
    returncode: int
    stdout: bytes
    stderr: bytes


async def run_launcher(argv: list[str], env: dict[str, str], timeout: float = 120) -> Ran:
    """Run the launcher without blocking the event loop the live master serves from."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harness.exec.launch",
        *argv,
        env=env,
        cwd=env["DET_WORKDIR"],
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return Ran(proc.returncode, out, err)


async def task_logs(m: LiveMaster, task_id: str) -> list[dict[str, Any]]:
    r = await m.http.get(f"/api/v1/tasks/{task_id}/logs", headers=m.admin)
    assert r.status_code == 200, r.text
    return [json.loads(line)["result"] for line in r.text.splitlines() if line.strip()]
