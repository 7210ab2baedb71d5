"""A detached run's trials never queue: reported RUNNING, they are ACTIVE but their tasks have
no job, so no pool's pass sees them (services/unmanaged.py). Both databases."""

from __future__ import annotations

from controlplane.db.session import make_engine, make_sessionmaker, transaction
from controlplane.services.scheduling.snapshot import load_pool_rows, still_pending
from tests.conftest import Master
from tests.controlplane.api.test_unmanaged_api import _patch, _put_experiment, _put_trial


async def test_running_detached_trials_are_not_pending(master: Master, db_url: str) -> None:
    m = master
    exp = await _put_experiment(m, m.user, "never-queued")
    trial = await _put_trial(m, exp["id"], "a")
    assert (await _patch(m, trial["id"], "STATE_RUNNING"))["state"] == "STATE_ACTIVE"
    engine = make_engine(db_url)
    try:
        async with transaction(make_sessionmaker(engine)) as s:
            rows = await load_pool_rows(s, "default")
            assert trial["taskId"] not in [p.task_id for p in rows.pending]
            assert await still_pending(s, "default", [trial["taskId"]]) == {}
    finally:
        await engine.dispose()
