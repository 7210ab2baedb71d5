"""Where a task may point the proxy (issue 38, finding 1): `proxy_address.check` as a table and
as a property, and the issue's attack against a live master, whose proxy then never reaches the
listener, even with the address written straight into the database."""

from __future__ import annotations

import asyncio
import ipaddress
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import update

from controlplane.api import proxy_address
from controlplane.api.proxy_address import AllocationFacts, check, check_resolved
from controlplane.db.models import Allocation
from controlplane.domain.proxy_ports import PORT_BASE, PORT_SPAN, assigned_ports, declared_ports
from tests.controlplane.services.scheduling.conftest import add_agent
from tests.support.fake_agent import FakeAgent
from tests.support.live_fixtures import agents as agents
from tests.support.live_fixtures import start_master as start_master
from tests.support.live_master import StartMaster, eventually

TASK = "0b8f9a3e-4c59-4a57-9d7e-2f0f2b6c1a11"
GIVEN = assigned_ports(TASK)[0]
LOCAL = AllocationFacts.of(
    TASK, ("127.0.0.1",), {"environment": {"proxy_ports": [{"proxy_port": 8888}]}}
)
REMOTE = AllocationFacts.of(TASK, ("10.0.0.5", "node-5.internal"), None)


@pytest.mark.parametrize(
    ("facts", "value", "status", "needle"),
    [
        (LOCAL, f"127.0.0.1:{GIVEN}", 200, ""),
        (LOCAL, "127.0.0.1:8888", 200, ""),  # declared in environment.proxy_ports
        (LOCAL, "127.0.0.1:38099", 403, "port 38099"),  # the attack
        (LOCAL, f"127.0.0.2:{GIVEN}", 403, "not this task's agent"),
        (LOCAL, f"localhost:{GIVEN}", 403, "not this task's agent"),
        (REMOTE, f"10.0.0.5:{GIVEN}", 200, ""),
        (REMOTE, f"NODE-5.internal.:{GIVEN}", 200, ""),
        (REMOTE, f"127.0.0.1:{GIVEN}", 403, "not this task's agent"),
        (REMOTE, f"10.0.0.6:{GIVEN}", 403, "not this task's agent"),
        (REMOTE, "10.0.0.5:22", 403, "port 22"),
        (LOCAL, "169.254.169.254:80", 403, "metadata"),
        (LOCAL, f"169.254.1.1:{GIVEN}", 403, "link-local"),
        (LOCAL, f"metadata.google.internal:{GIVEN}", 403, "metadata"),
        (LOCAL, f"0.0.0.0:{GIVEN}", 403, "unspecified"),
        (LOCAL, "[fd00:ec2::254]:80", 400, "host:port"),
        (LOCAL, "fe80::1:80", 400, "host:port"),
        (LOCAL, "127.0.0.1", 400, "host:port"),
        (LOCAL, "u@127.0.0.1:1", 400, "host:port"),
        # an agent that reports a forbidden address does not make it allowed
        (AllocationFacts.of(TASK, ("169.254.169.254",), None), f"169.254.169.254:{GIVEN}", 403,
         "metadata"),
        (AllocationFacts.of(TASK, ("0.0.0.0",), None), f"0.0.0.0:{GIVEN}", 403, "unspecified"),
    ],
)  # fmt: skip
def test_where_a_task_may_point_the_proxy(
    facts: AllocationFacts, value: str, status: int, needle: str
) -> None:
    verdict = check(value, facts)
    assert (verdict.allowed, verdict.status) == (status == 200, status), verdict
    assert needle in verdict.reason


hosts = st.one_of(
    st.ip_addresses().map(str),
    st.sampled_from(["127.0.0.1", "10.0.0.5", "169.254.169.254", "metadata.google.internal",
                     "node-5.internal", "0.0.0.0", "localhost"]),
    st.from_regex(r"[a-z0-9][a-z0-9.-]{0,20}", fullmatch=True),
)  # fmt: skip
ports = st.one_of(st.integers(1, 65535), st.sampled_from(assigned_ports(TASK)))


@given(st.lists(hosts, max_size=3), st.sets(st.integers(1, 65535), max_size=3), hosts, ports)
def test_an_allowed_address_is_the_agents_on_a_given_port_and_never_forbidden(
    agents: list[str], declared: set[int], host: str, port: int
) -> None:
    config = {"environment": {"proxy_ports": [{"proxy_port": p} for p in declared]}}
    facts = AllocationFacts.of(TASK, agents, config)
    verdict = check(f"{host}:{port}", facts)
    if not verdict.allowed:
        assert verdict.status in (400, 403) and verdict.reason
        return
    assert port in set(assigned_ports(TASK)) | declared
    assert any(proxy_address._canonical(a) == proxy_address._canonical(host) for a in agents)
    assert proxy_address.forbidden_host(host) is None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return
    assert not (ip.is_link_local or ip.is_unspecified) and ip not in proxy_address.METADATA_IPS


@given(st.text(max_size=40))
def test_any_task_id_gets_its_ports_in_range(task_id: str) -> None:
    ports = assigned_ports(task_id)
    assert len(set(ports)) == len(ports) == 8
    assert all(PORT_BASE <= p < PORT_BASE + PORT_SPAN for p in ports)
    assert ports == assigned_ports(task_id)


def test_declared_ports_ignore_what_is_not_a_port() -> None:
    items = [
        {"proxy_port": 1},
        {"proxy_port": True},
        {"proxy_port": 70000},
        "x",
        {"proxy_port": "2"},
    ]
    config = {"environment": {"proxy_ports": items}}
    assert declared_ports(config) == frozenset({1})
    assert declared_ports({"environment": []}) == frozenset()


@pytest.mark.parametrize(
    ("resolved", "agents", "chosen"),
    [
        (["127.0.0.1"], ["127.0.0.1"], "127.0.0.1"),
        (["10.0.0.9"], ["10.0.0.5"], None),  # a name that resolves elsewhere
        (["10.0.0.5", "169.254.169.254"], ["10.0.0.5"], None),
        (["::ffff:169.254.169.254"], ["::ffff:169.254.169.254"], None),
        ([], ["10.0.0.5"], None),
    ],
)
def test_connect_time_resolution(
    resolved: list[str], agents: list[str], chosen: str | None
) -> None:
    got, why = check_resolved(resolved, agents)
    assert got == chosen and (why == "") is (chosen is not None)


# --- the attack, on a live master --------------------------------------------------------


async def _listener() -> tuple[asyncio.Server, list[bytes]]:
    reached: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.append(await reader.read(1024))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecret")
        await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0), reached


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_task_cannot_aim_the_proxy_at_a_local_listener(
    start_master: StartMaster, agents: list[FakeAgent], db_url: str
) -> None:
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    r = await m.http.post("/api/v1/notebooks", json={"config": {}}, headers=m.admin)
    assert r.status_code == 200, r.text
    task_id = r.json()["notebook"]["id"]

    async def started() -> object:
        return next((s for s in agent.started.values() if s.spec.task_id == task_id), None)

    start = await eventually(started)
    alloc = start.spec.allocation_id
    env = start.spec.environment
    token = {"Grpc-Metadata-x-allocation-token": f"Bearer {env['DET_SESSION_TOKEN']}"}
    settings = json.loads(env["RESOLUTE_INTERACTIVE"])
    assert settings["ports"] == list(assigned_ports(task_id))

    server, reached = await _listener()
    port = server.sockets[0].getsockname()[1]
    assert port not in assigned_ports(task_id)
    try:
        url = f"/api/v1/allocations/{alloc}/proxy_address"
        for address in (
            f"127.0.0.1:{port}",
            "169.254.169.254:80",
            f"127.0.0.2:{assigned_ports(task_id)[0]}",
        ):
            r = await m.http.post(url, json={"proxyAddress": address}, headers=token)
            assert r.status_code == 403, (address, r.text)
        r = await m.http.post(
            url, json={"proxyAddress": f"127.0.0.1:{assigned_ports(task_id)[0]}"}, headers=token
        )
        assert r.status_code == 200, r.text
        # stored by other means (a master before this check): the proxy checks again
        async with m.app.state["api"].sessionmaker() as session:
            await session.execute(
                update(Allocation)
                .where(Allocation.allocation_id == alloc)
                .values(proxy_address=f"127.0.0.1:{port}")
            )
            await session.commit()
        r = await m.http.get(f"/proxy/{task_id}/", headers=m.admin)
        assert r.status_code == 403 and "does not connect there" in r.text, r.text
        assert reached == []
    finally:
        server.close()
