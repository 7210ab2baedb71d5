"""`det job list` and `det job update` against a live master with a 1-slot fake agent."""

from __future__ import annotations

import json

from tests.cli.commands.conftest import (
    StartMaster,
    add_agent,
    det_for,
    eventually,
    experiment_yaml,
    fails,
    jobs,
    ok,
    queue_of,
    running_on,
    submit,
    table_rows,
)
from tests.cli.fake_master import FakeMaster, logged_in, paged, run_det
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import LiveMaster


async def _three_jobs(m: LiveMaster, agents: list[FakeAgent]) -> dict[str, dict]:
    """`a` runs on the only slot; `b` then `c` queue behind it. Returns the jobs by name."""
    agent = await add_agent(m, agents, "a1", 1)
    await submit(m, experiment_yaml("a"))
    await running_on(agent)
    await submit(m, experiment_yaml("b"))
    await submit(m, experiment_yaml("c"))
    return {j["name"]: j for j in await queue_of(m, 3)}


async def test_list_shows_the_queue_in_order_with_why_jobs_wait(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    by_name = await _three_jobs(m, agents)
    det = det_for(m)

    listed = json.loads(ok(await det("job", "list", "--json")))["jobs"]
    assert [j["name"] for j in listed] == ["a", "b", "c"]
    assert listed[1]["waitReason"] and listed[0]["waitReason"] == ""

    out = ok(await det("job", "list"))
    for header in ("#", "ID", "Type", "Job Name", "Priority", "Submitted", "Why Waiting"):
        assert header in out
    assert "Weight" not in out and "Resource Pool" not in out  # one priority pool
    rows = table_rows(out)
    assert len(rows) == 3
    for position, name in enumerate("abc"):
        job = by_name[name]
        cells = rows[position]
        assert cells[0] == str(position)  # jobs ahead
        assert cells[1] == job["jobId"]
        assert cells[2] == "EXPERIMENT"
        assert cells[3] == f"{name} ({job['entityId']})"
        assert cells[4] == "42"  # the pool's default priority
        assert cells[6] == ("1/1" if name == "a" else "0/1")
        assert cells[7] == ("SCHEDULED" if name == "a" else "QUEUED")
        assert cells[8] == "admin"
        assert (cells[9] != "") == (name != "a")

    reverse = json.loads(ok(await det("job", "ls", "--reverse", "--json")))["jobs"]
    assert [j["name"] for j in reverse] == ["c", "b", "a"]
    page = json.loads(ok(await det("j", "list", "--limit", "1", "--offset", "1", "--json")))
    assert [j["name"] for j in page["jobs"]] == ["b"]
    pool = json.loads(ok(await det("job", "list", "-p", "default", "--json")))["jobs"]
    assert len(pool) == 3
    fails(await det("job", "list", "-p", "nope"), "resource pool 'nope' not found", "default")


async def test_update_moves_a_job_and_changes_its_priority(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    by_name = await _three_jobs(m, agents)
    det = det_for(m)
    b, c = by_name["b"]["jobId"], by_name["c"]["jobId"]

    out = ok(await det("job", "update", c, "--ahead-of", b))
    assert out == f"Updated job {c}: ahead of {b}\n"

    async def order(expected: list[str]) -> bool:
        return [j["name"] for j in await jobs(m)] == expected

    await eventually(lambda: order(["a", "c", "b"]), timeout=10)
    rows = table_rows(ok(await det("job", "list")))
    assert [rows[1][1], rows[2][1]] == [c, b]

    ok(await det("job", "update", c, "--behind-of", b))
    await eventually(lambda: order(["a", "b", "c"]), timeout=10)

    out = ok(await det("job", "update", c, "--priority", "10"))
    assert out == f"Updated job {c}: priority 10\n"
    await eventually(lambda: order(["c", "a", "b"]), timeout=10)
    listed = json.loads(ok(await det("job", "list", "--json")))["jobs"]
    assert listed[0]["priority"] == 10 and listed[0]["jobId"] == c


async def test_bad_updates_are_clear_errors_and_change_nothing(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    by_name = await _three_jobs(m, agents)
    det = det_for(m)
    b, c = by_name["b"]["jobId"], by_name["c"]["jobId"]
    before = [j["jobId"] for j in await jobs(m)]

    fails(await det("job", "update", "no-such-job", "--priority", "3"), "job no-such-job not found")
    fails(
        await det("job", "update", c, "--priority", "0"),
        "priority must be between 1 and 99 (got 0)",
        "HTTP 400",
    )
    fails(await det("job", "update", c, "--weight", "0"), "weight must be greater than 0")
    fails(await det("job", "update", c, "--ahead-of", "no-such-job"), "job no-such-job not found")
    fails(await det("job", "update", c, "--ahead-of", c), "relative to itself")
    fails(await det("job", "update", c, "--resource-pool", "nope"), "nope")
    fails(
        await det("job", "update", c, "--ahead-of", b, "--behind-of", b),
        "--ahead-of and --behind-of cannot be used together",
        code=2,
    )
    fails(await det("job", "update", c), "nothing to change", "--priority", code=2)
    fails(await det("job", "update", c, "--priority", "high"), "--priority", "integer", code=2)
    assert [j["jobId"] for j in await jobs(m)] == before


async def test_fair_share_pool_shows_weights_and_no_order(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master(resource_manager={"scheduler": {"type": "fair_share"}})
    await add_agent(m, agents, "a1", 1)
    a = (await submit(m, experiment_yaml("a")))["experiment"]
    await submit(m, experiment_yaml("b"))
    await queue_of(m, 2)
    det = det_for(m)

    out = ok(await det("job", "list"))
    assert "Weight" in out and "Priority" not in out
    assert [row[0] for row in table_rows(out)] == ["N/A", "N/A"]

    assert ok(await det("job", "update", a["jobId"], "-w", "3")) == (
        f"Updated job {a['jobId']}: weight 3\n"
    )

    async def weighted() -> bool:
        return any(j["weight"] == 3 for j in await jobs(m))

    await eventually(weighted, timeout=10)
    rows = table_rows(ok(await det("job", "list")))
    weights = sorted(row[4] for row in rows)
    assert weights == ["1", "3"]


# --- What goes on the wire (an in-memory fake master records the requests) -------------------

FAKE_POOLS = [
    {"name": "default", "defaultComputePool": True, "schedulerType": "SCHEDULER_TYPE_PRIORITY"},
    {"name": "fs", "defaultComputePool": False, "schedulerType": "SCHEDULER_TYPE_FAIR_SHARE"},
]


def _fake_job(n: int) -> dict:
    return {
        "full": {
            "jobId": f"job-{n}",
            "type": "TYPE_COMMAND",
            "name": f"cmd-{n}",
            "entityId": f"task-{n}",
            "priority": 42,
            "weight": 1,
            "resourcePool": "default",
            "submissionTime": "2026-01-02T03:04:05Z",
            "allocatedSlots": 0,
            "requestedSlots": 1,
            "summary": {"state": "STATE_QUEUED", "jobsAhead": n},
            "username": "admin",
        }
    }


def _fake_master() -> FakeMaster:
    master = FakeMaster({"admin": "secret"})
    logged_in(master)
    master.add("GET", "/api/v1/resource-pools", paged("resourcePools", FAKE_POOLS))
    master.add("GET", "/api/v1/job-queues-v2", paged("jobs", [_fake_job(n) for n in range(250)]))
    master.add("POST", "/api/v1/job-queues", {})
    return master


def test_list_reads_every_page_in_the_order_asked_for() -> None:
    master = _fake_master()
    result = run_det(master, "job", "list", "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["jobs"]) == 250
    calls = master.calls("GET", "/api/v1/job-queues-v2")
    assert [dict(c.url.params) for c in calls] == [
        {"orderBy": "ORDER_BY_ASC", "offset": str(o), "limit": "100"} for o in (0, 100, 200)
    ]
    result = run_det(master, "job", "list", "--reverse", "-p", "fs", "--limit", "5")
    assert result.exit_code == 0, result.output
    assert dict(master.calls("GET", "/api/v1/job-queues-v2")[-1].url.params) == {
        "orderBy": "ORDER_BY_DESC",
        "resourcePool": "fs",
        "offset": "0",
        "limit": "5",
    }
    assert "Weight" in result.stdout and "cmd-4" in result.stdout  # not an experiment: no "(id)"


def test_update_sends_only_what_was_given() -> None:
    master = _fake_master()
    for args in (
        ("job-1", "-p", "5"),
        ("job-1", "--weight", "2.5", "--resource-pool", "fs"),
        ("job-1", "--behind-of", "job-2"),
    ):
        result = run_det(master, "job", "update", *args)
        assert result.exit_code == 0, result.output
    assert master.json_bodies("POST", "/api/v1/job-queues") == [
        {"updates": [{"jobId": "job-1", "priority": 5}]},
        {"updates": [{"jobId": "job-1", "weight": 2.5, "resourcePool": "fs"}]},
        {"updates": [{"jobId": "job-1", "behindOf": "job-2"}]},
    ]
    assert result.stdout == "Updated job job-1: behind job-2\n"
