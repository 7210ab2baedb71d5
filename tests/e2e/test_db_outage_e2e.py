"""Issue 38's report end to end: a real trial (master + agent + harness as processes, the
master on a PostgreSQL database of the test's own) keeps training through 10 s of its database
refusing connections (`ALLOW_CONNECTIONS false` and its backends terminated: 55000 on connect,
57P01 for the killed sessions). It used to get 500s, exit, lose its last log lines and restart
from its checkpoint, while the master wrote ~1,440 log lines a second.

Now: no restart, every metric and every log line exactly once, and the master's log says the
database went away in one line and came back in one more, with no traceback.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import asyncpg
import pytest

from cli.deploy import local
from tests.conftest import PG_DSN
from tests.e2e.conftest import WORKLOAD, Deploy, steps_config

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

STEPS = 30
OUTAGE_S = 10.0


def admin(*statements: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(PG_DSN)
        try:
            for sql in statements:
                await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run())


def test_a_trial_pauses_through_a_database_that_refuses_connections(
    deploy: Deploy, tmp_path: Path, pg_skip_reason: str | None
) -> None:
    if pg_skip_reason:
        pytest.skip(pg_skip_reason)
    db = f"resolute_test_{uuid.uuid4().hex[:12]}"
    admin(f'CREATE DATABASE "{db}"')
    try:
        url = PG_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
        d = deploy(agents=1, slots=1, runtime="process", master_config=f"db:\n  url: {url}/{db}\n")
        master_log = d.data_dir / local.LOG_DIR / "master.log"
        exp_id = d.create_experiment(steps_config(STEPS, 0.5, 10), WORKLOAD, tmp_path)
        trial_id = d.trial_of(exp_id)["id"]
        d.wait_steps(trial_id, 3, timeout=120)

        before = master_log.read_text().splitlines()
        admin(
            f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS false',
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{db}'",
        )
        time.sleep(OUTAGE_S)  # the outage itself: the trial trains and reports meanwhile
        admin(f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS true')

        done = d.wait_trial_state(trial_id, {"STATE_COMPLETED"}, timeout=240)
        assert done["restarts"] == 0
        assert d.training_steps(trial_id) == list(range(1, STEPS + 1))  # each exactly once
        logs = d.trial_logs(trial_id)
        assert [line for line in logs if line.startswith("started at step")] == [
            "started at step 0 (run 1)"
        ]
        for step in range(1, STEPS + 1):
            assert logs.count(f"step {step}") == 1, (step, logs)
        assert logs.count("done") == 1

        during = master_log.read_text().splitlines()[len(before) :]
        down = [line for line in during if "the database is unavailable" in line]
        back = [line for line in during if "the database is back" in line]
        assert (len(down), len(back)) == (1, 1), during[-80:]
        assert not [line for line in during if "Traceback" in line], during[-80:]
        # Besides uvicorn's line per request (a few 503s a second, as the clients back off),
        # the master said exactly these two things.
        said = [line for line in during if not line.startswith("INFO:     127.0.0.1:")]
        assert said == [*down, *back], said
        print(f"master log lines from the outage to the trial's end: {len(during)}")
    finally:
        admin(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
