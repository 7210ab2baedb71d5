"""The real `determined==0.38.1` client reads historical usage from our master: its bindings'
`get_ResourceAllocationAggregated` / `get_ResourceAllocationRaw` parse our answers, and its
`det resources allocations|raw|aggregated` print our CSV exports, with what the work cost.

One trial holds 2 of a $4.00/h 4-slot instance's slots from 01:00 to 03:00 on 2026-12-01: 4
slot-hours, $4.00 (the instance itself: 4 h, $16.00)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from controlplane.db.models import Allocation, ProvisionerInstance
from controlplane.db.session import make_engine, make_sessionmaker
from tests.compat.conftest import PASSWORD, RunningMaster, master_process
from tests.compat.test_determined_cli import Det

pytestmark = [pytest.mark.compat, pytest.mark.slow]

CONFIG = """\
name: costed
entrypoint: python3 train.py
labels: [nightly]
searcher: {name: single, metric: loss, max_length: 10}
resources: {slots_per_trial: 2}
"""

READ = r"""
import json, os, warnings
warnings.simplefilter("ignore", FutureWarning)
from determined.common.api import authentication, bindings
sess = authentication.login(os.environ["MASTER"], "admin", os.environ["PASSWORD"])
agg = bindings.get_ResourceAllocationAggregated(
    sess, startDate="2026-12-01", endDate="2026-12-02",
    period=bindings.v1ResourceAllocationAggregationPeriod.DAILY,
)
raw = bindings.get_ResourceAllocationRaw(
    sess, timestampAfter="2026-12-01T00:00:00Z", timestampBefore="2026-12-02T00:00:00Z",
)
print("RESULT " + json.dumps({
    "aggregated": [
        [e.periodStart, e.period.value, e.seconds, e.byUsername, e.byExperimentLabel,
         e.byResourcePool] for e in agg.resourceEntries
    ],
    "raw": sorted(
        [[e.kind, e.experimentId, e.username, e.slots, e.seconds]
         for e in raw.resourceEntries or []],
        key=str,
    ),
}))
"""


def at(hour: int) -> datetime:
    return datetime(2026, 12, 1, hour, tzinfo=UTC)


async def _charge(db_url: str, task_id: str) -> None:
    engine = make_engine(db_url)
    try:
        async with make_sessionmaker(engine)() as session, session.begin():
            session.add(
                ProvisionerInstance(
                    pool="default",
                    instance_id="i-0abc",
                    agent_name="i-0abc",
                    offer_key="g5.12xlarge@subnet-a/on-demand",
                    instance_type="g5.12xlarge",
                    spot=False,
                    slots=4,
                    price_per_hour=4.0,
                    launched_at=at(0),
                    ended_at=at(4),
                )
            )
            session.add(
                Allocation(
                    allocation_id=f"{task_id}.1",
                    task_id=task_id,
                    state="TERMINATED",
                    token_hash="compat-cost",
                    slots=2,
                    resource_pool="default",
                    placement={"i-0abc": [0, 1]},
                    start_time=at(1),
                    end_time=at(3),
                )
            )
    finally:
        await engine.dispose()


@pytest.fixture(scope="module")
def usage_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningMaster]:
    with master_process(tmp_path_factory) as master:
        yield master


@pytest.fixture(scope="module")
def charged(usage_master: RunningMaster, admin_headers: dict[str, str]) -> int:
    r = httpx.post(
        f"{usage_master.url}/api/v1/experiments",
        json={"config": CONFIG},
        headers=admin_headers,
        timeout=30,
    )
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]
    r = httpx.get(
        f"{usage_master.url}/api/v1/experiments/{exp['id']}/trials",
        headers=admin_headers,
        timeout=30,
    )
    asyncio.run(_charge(usage_master.db_url, r.json()["trials"][0]["taskId"]))
    return int(exp["id"])


@pytest.fixture(scope="module")
def admin_headers(usage_master: RunningMaster) -> dict[str, str]:
    from cli.auth import hash_password

    body = {"username": "admin", "password": hash_password(PASSWORD), "isHashed": True}
    reply = httpx.post(f"{usage_master.url}/api/v1/auth/login", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    return {"Authorization": f"Bearer {reply.json()['token']}"}


@pytest.fixture(scope="module")
def det(
    det_bin: Path, usage_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory
) -> Det:
    return Det(det_bin, usage_master, tmp_path_factory.mktemp("detcfg"))


def test_the_real_bindings_parse_our_usage(
    det_bin: Path, usage_master: RunningMaster, charged: int, tmp_path: Path
) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DET_")},
        "MASTER": usage_master.url,
        "PASSWORD": PASSWORD,
        "DET_DEBUG_CONFIG_PATH": str(tmp_path / "cfg"),
    }
    proc = subprocess.run(
        [str(det_bin / "python"), "-c", READ], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    out = json.loads(line.removeprefix("RESULT "))
    daily = "RESOURCE_ALLOCATION_AGGREGATION_PERIOD_DAILY"
    hours = 14400.0
    assert out["aggregated"] == [
        ["2026-12-01", daily, hours, {"admin": hours}, {"nightly": hours}, {"default": hours}],
        ["2026-12-02", daily, 0.0, {}, {}, {}],
    ]
    assert out["raw"] == sorted(
        [["instance", None, "i-0abc", 4, 14400.0], ["trial", charged, "admin", 2, 7200.0]],
        key=str,
    )


def test_the_real_det_resources_commands(det: Det, charged: int) -> None:
    creds = {"DET_USER": "admin", "DET_PASS": PASSWORD}
    _, out = det("res", "alloc", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z", **creds)
    [row] = list(csv.DictReader(io.StringIO(out)))
    assert int(row["experiment_id"]) == charged and row["task_type"] == "TRIAL"
    assert float(row["cost_usd"]) == 4.0
    _, out = det("res", "raw", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z", **creds)
    rows = {r["kind"]: r for r in csv.DictReader(io.StringIO(out))}
    assert float(rows["instance"]["cost_usd"]) == 16.0 and rows["trial"]["labels"] == "nightly"
    _, out = det("res", "agg", "2026-12-01", "2026-12-01", **creds)
    total = next(r for r in csv.DictReader(io.StringIO(out)) if r["aggregation_type"] == "total")
    assert float(total["seconds"]) == 14400.0 and float(total["cost_usd"]) == 4.0
    _, out = det("res", "agg", "2026-12-01", "2026-12-01", "--json", **creds)
    [entry] = json.loads(out)["resourceEntries"]
    assert entry["cost"] == 4.0 and entry["costByUsername"] == {"admin": 4.0}
