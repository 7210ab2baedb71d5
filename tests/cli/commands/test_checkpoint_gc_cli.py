"""`det checkpoint delete|protect|describe`, `det experiment gc [--dry-run]` and
`det experiment list-checkpoints --best N` against a live master whose own periodic GC job
(APScheduler, a short interval) deletes the files on shared_fs."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from cli.main import app
from tests.cli.commands.conftest import StartMaster, det_for, eventually, fails, ok
from tests.conftest import PASSWORD
from tests.support.live_master import LiveMaster


def yaml(base: Path) -> str:
    return "\n".join(
        [
            "name: gc-cli",
            "entrypoint: python3 train.py",
            "searcher: {name: single, metric: loss, max_length: 10}",
            "resources: {slots_per_trial: 0}",
            f"checkpoint_storage: {{type: shared_fs, host_path: '{base}', storage_path: s,"
            " save_trial_best: 1, save_trial_latest: 1}",
        ]
    )


async def report(m: LiveMaster, trial_id: int, steps: int, loss: float, base: Path) -> str:
    ckpt = str(uuid.uuid4())
    body = {
        "uuid": ckpt,
        "resources": {"model.txt": "5"},
        "metadata": {"steps_completed": steps},
        "training": {"trialId": trial_id},
    }
    await m.post("/api/v1/checkpoints", body)
    metrics = {"stepsCompleted": steps, "metrics": {"avgMetrics": {"loss": loss}}}
    await m.post(f"/api/v1/trials/{trial_id}/metrics", {"group": "validation", "metrics": metrics})
    (base / "s" / ckpt).mkdir(parents=True)
    (base / "s" / ckpt / "model.txt").write_text("model")
    return ckpt


async def answer(m: LiveMaster, text: str, *args: str) -> Result:
    env = {"DET_MASTER": m.url, "DET_USER": "admin", "DET_PASS": PASSWORD}
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), input=text, env=env)


async def test_checkpoint_gc_from_the_cli(start_master: StartMaster, tmp_path: Path) -> None:
    m = await start_master(checkpoint_gc_interval_s=0.2)
    det = det_for(m)
    base = tmp_path / "store"
    exp = await m.post("/api/v1/experiments", {"config": yaml(base), "activate": False})
    exp_id = exp["experiment"]["id"]
    trial_id = (await m.get(f"/api/v1/experiments/{exp_id}/trials"))["trials"][0]["id"]
    first = await report(m, trial_id, 10, 0.7, base)
    best = await report(m, trial_id, 20, 0.1, base)
    worse = await report(m, trial_id, 30, 0.9, base)
    latest = await report(m, trial_id, 40, 0.8, base)

    out = ok(await det("checkpoint", "protect", first))
    assert f"Checkpoint {first} is protected" in out
    plan = json.loads(ok(await det("experiment", "gc", str(exp_id), "--dry-run", "--json")))
    assert [e["uuid"] for e in plan["delete"]] == [worse]
    out = ok(await det("e", "gc", str(exp_id), "--dry-run"))
    assert "would be deleted" in out and worse in out
    top = json.loads(ok(await det("e", "list-checkpoints", str(exp_id), "--best", "2", "--json")))
    assert [c["uuid"] for c in top["checkpoints"]] == [best, first]

    # Ending the experiment is all it takes: the master's periodic job collects it.
    await m.post(f"/api/v1/experiments/{exp_id}/kill")

    async def gone() -> dict[str, Any]:
        shown = json.loads(ok(await det("checkpoint", "describe", worse, "--json")))
        return shown if shown["checkpoint"]["state"] == "STATE_DELETED" else {}

    await eventually(gone, timeout=20)
    assert not (base / "s" / worse).exists()
    assert "Deleted" in ok(await det("checkpoint", "describe", worse))
    for kept in (first, best, latest):
        assert (base / "s" / kept / "model.txt").exists()

    # Determined's gc-policy shows what a policy would delete; no changes nothing.
    policy = ["--save-experiment-best", "0", "--save-trial-best", "0"]
    out = ok(
        await answer(
            m, "n\n", "e", "set", "gc-policy", str(exp_id), *policy, "--save-trial-latest", "1"
        )
    )
    assert best in out and "will delete 1 checkpoints with validations" in out
    assert "Aborting operations." in out
    assert (await m.get(f"/api/v1/experiments/{exp_id}"))["config"]["checkpoint_storage"][
        "save_trial_best"
    ] == 1

    # Determined's prompt; no keeps everything, a protected one refuses, --yes deletes.
    (base / "s" / latest / "scratch.tmp").write_text("x")
    out = ok(await answer(m, "n\n", "checkpoint", "rm", latest, "--glob", "*.tmp"))
    assert "Stopping removal of files from checkpoints." in out
    assert (base / "s" / latest / "scratch.tmp").exists()
    out = ok(await det("checkpoint", "rm", latest, "--glob", "*.tmp", "--yes"))
    assert f"Removal of files from checkpoints {latest} is in progress." in out

    async def trimmed() -> bool:
        shown = json.loads(ok(await det("checkpoint", "describe", latest, "--json")))
        return shown["checkpoint"]["state"] == "STATE_PARTIALLY_DELETED"

    await eventually(trimmed, timeout=20)
    assert not (base / "s" / latest / "scratch.tmp").exists()
    out = ok(await answer(m, "n\n", "checkpoint", "delete", latest))
    assert "Stopping deletion of checkpoints." in out
    fails(await det("checkpoint", "delete", f"{first},{latest}", "--yes"), "protected")
    fails(await det("checkpoint", "delete", "not-a-uuid", "--yes"), "is not a UUID")
    fails(await det("checkpoint", "delete", str(uuid.UUID(int=5)), "--yes"), "not found")
    out = ok(await det("checkpoint", "delete", latest, "--yes"))
    assert f"Deletion of checkpoints {latest} is in progress" in out

    async def latest_gone() -> bool:
        shown = json.loads(ok(await det("c", "describe", latest, "--json")))
        return shown["checkpoint"]["state"] == "STATE_DELETED"

    await eventually(latest_gone, timeout=20)
    assert not (base / "s" / latest).exists() and (base / "s" / first).exists()
