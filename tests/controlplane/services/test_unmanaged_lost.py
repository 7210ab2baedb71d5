"""A running detached trial whose run stops sending heartbeats ends in ERROR after five minutes
(Determined's MarkLostTrials), its end time its last heartbeat, and its experiment follows;
paused, ended and managed trials are left alone. Both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from controlplane.db.models import Trial
from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.services.unmanaged import mark_lost_trials
from tests.conftest import Master
from tests.controlplane.api.test_smoke_flow import CONFIG
from tests.controlplane.api.test_unmanaged_api import (
    _experiment,
    _patch,
    _put_experiment,
    _put_trial,
)


async def _lost(db_url: str, now: datetime) -> list[int]:
    engine = make_engine(db_url)
    try:
        async with transaction(make_sessionmaker(engine)) as session:
            return await mark_lost_trials(session, now)
    finally:
        await engine.dispose()


async def _last_activity(db_url: str, trial_id: int) -> datetime:
    engine = make_engine(db_url)
    try:
        async with transaction(make_sessionmaker(engine)) as session:
            trial = await session.get(Trial, trial_id)
            assert trial is not None and trial.last_activity is not None
            return trial.last_activity
    finally:
        await engine.dispose()


async def test_silent_runs_end_in_error(master: Master, db_url: str) -> None:
    m = master
    exp = await _put_experiment(m, m.user, "silent")
    running: dict[str, Any] = await _put_trial(m, exp["id"], "running")
    paused = await _put_trial(m, exp["id"], "paused")
    done = await _put_trial(m, exp["id"], "done")
    for trial in (running, done):
        await _patch(m, trial["id"], "STATE_RUNNING")
    await _patch(m, done["id"], "STATE_COMPLETED")
    r = await m.client.post("/api/v1/experiments", json={"config": CONFIG}, headers=m.user)
    assert r.status_code == 200, r.text

    heard = await _last_activity(db_url, running["id"])
    assert await _lost(db_url, heard + timedelta(minutes=5)) == []
    assert await _lost(db_url, heard + timedelta(minutes=5, seconds=1)) == [running["id"]]
    assert await _lost(db_url, heard + timedelta(hours=1)) == []  # once

    r = await m.client.get(f"/api/v1/trials/{running['id']}", headers=m.user)
    trial = r.json()["trial"]
    assert trial["state"] == "STATE_ERROR"
    assert datetime.fromisoformat(trial["endTime"].replace("Z", "+00:00")) == heard
    states = {t["id"]: t["state"] for t in (await _trials(m, exp["id"]))}
    assert states[paused["id"]] == "STATE_PAUSED" and states[done["id"]] == "STATE_COMPLETED"
    # The most progressed trial now is the completed one.
    assert (await _experiment(m, exp["id"]))["state"] == "STATE_COMPLETED"
    assert heard.tzinfo is not None and heard <= datetime.now(UTC)


async def _trials(m: Master, exp_id: int) -> list[dict[str, Any]]:
    r = await m.client.get(f"/api/v1/experiments/{exp_id}/trials", headers=m.user)
    assert r.status_code == 200, r.text
    return list(r.json()["trials"])
