"""Port tunnels (issue 39, finding 5): an experiment's `environment.proxy_ports` reached through
the master's proxy at `/proxy/{task}:{port}/`, with issue 38's isolation kept.

A live master with a fake agent (so the trial really has an allocation on an agent whose
address is loopback) and the trial's "servers" run by the test on loopback ports: an HTTP one
that records what it receives and a TCP echo. Before this, every such request was answered
`interactive task {task}:{port} not found`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import websockets

from controlplane.api import proxy_origin
from tests.api.test_rbac_routes import make_user
from tests.conftest import PASSWORD
from tests.controlplane.services.scheduling.conftest import (
    StartMaster,
    add_agent,
    allocations_on,
    experiment_yaml,
)
from tests.support.fake_agent import FakeAgent
from tests.support.live_fixtures import agents as agents
from tests.support.live_fixtures import start_master as start_master
from tests.support.live_master import LiveMaster, eventually, free_port

REPO = Path(__file__).resolve().parents[3]
DET_PYTHON = Path(os.environ.get("DETERMINED_CLIENT_VENV", REPO / ".venv-det")) / "bin" / "python"


@dataclass
class Recorder:
    """An HTTP server that answers `Hello` and keeps every request's head."""

    port: int = 0
    heads: list[bytes] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while head := await reader.readuntil(b"\r\n\r\n"):
                self.heads.append(head)
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
                    b"Set-Cookie: auth=from-the-task; Path=/\r\n\r\nHello"
                )
                await writer.drain()
        writer.close()


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


@dataclass
class World:
    m: LiveMaster
    agent: FakeAgent
    owner: dict[str, str]
    other: dict[str, str]
    task: str
    http: Recorder
    tcp_port: int
    public_port: int
    public: Recorder

    def url(self, port: int | None, rest: str = "") -> str:
        service = self.task if port is None else f"{self.task}:{port}"
        return f"/proxy/{service}/{rest}"


@contextlib.asynccontextmanager
async def servers() -> AsyncIterator[tuple[Recorder, int, Recorder]]:
    http, public = Recorder(), Recorder()
    started = [
        await asyncio.start_server(http.handle, "127.0.0.1", 0),
        await asyncio.start_server(echo, "127.0.0.1", 0),
        await asyncio.start_server(public.handle, "127.0.0.1", 0),
    ]
    http.port, tcp_port, public.port = (s.sockets[0].getsockname()[1] for s in started)
    try:
        yield http, tcp_port, public
    finally:
        for s in started:
            s.close()


def ports_yaml(http: int, tcp: int, public: int) -> str:
    return experiment_yaml("ports") + (
        "\nenvironment:\n  proxy_ports:\n"
        f"    - proxy_port: {http}\n      proxy_tcp: false\n"
        f"    - proxy_port: {tcp}\n      proxy_tcp: true\n"
        f"    - proxy_port: {public}\n      unauthenticated: true\n"
    )


@pytest.fixture
async def world(start_master: StartMaster, agents: list[FakeAgent]) -> AsyncIterator[World]:
    m = await start_master()
    _, owner = await make_user(m, "owner")
    _, other = await make_user(m, "other")
    async with servers() as (http, tcp_port, public):
        agent = await add_agent(m, agents, "a1", 1)
        config = ports_yaml(http.port, tcp_port, public.port)
        r = await m.http.post(
            "/api/v1/experiments",
            headers=owner,
            json={"config": config, "modelDefinition": [], "activate": True},
        )
        assert r.status_code == 200, r.text
        exp_id = r.json()["experiment"]["id"]
        await allocations_on(agent)
        trials = (await m.get(f"/api/v1/experiments/{exp_id}/trials"))["trials"]
        yield World(
            m, agent, owner, other, trials[0]["taskId"], http, tcp_port, public.port, public
        )


async def test_a_declared_port_is_reached_by_its_owner_and_admins_only(world: World) -> None:
    m, url = world.m, world.url(world.http.port, "status?x=1")
    for who in (world.owner, m.admin):
        r = await m.http.get(url, headers=who)
        assert r.status_code == 200 and r.text == "Hello", r.text
    r = await m.http.get(url, headers=world.other)
    assert r.status_code == 403 and "owner" in r.json()["message"]
    r = await m.http.get(url)
    assert r.status_code == 401
    r = await m.http.get(url, headers={"Authorization": "Bearer forged"})
    assert r.status_code == 401
    # what reached the task: the path as asked, and not one of the visitor's credentials
    assert world.http.heads[0].startswith(f"GET {url} HTTP/1.1\r\n".encode())
    for head in world.http.heads:
        assert b"authorization" not in head.lower() and b"bearer" not in head.lower()


async def test_no_credential_reaches_the_task_and_the_answer_is_sandboxed(world: World) -> None:
    m = world.m
    token = world.owner["Authorization"].removeprefix("Bearer ")
    headers = {
        **world.owner,
        "Cookie": f"auth={token}; resolute_proxy=x; mine=1",
        "X-Allocation-Token": "Bearer alloc",
        "Grpc-Metadata-x-allocation-token": "Bearer alloc",
    }
    r = await m.http.post(world.url(world.http.port, "form"), headers=headers, content=b"a=1")
    assert r.status_code == 200 and r.text == "Hello"
    head = world.http.heads[-1].lower()
    assert token.encode().lower() not in head and b"alloc" not in head
    assert b"cookie: mine=1\r\n" in head and b"resolute_proxy" not in head
    assert r.headers["content-security-policy"] == proxy_origin.SANDBOX_CSP.decode()
    assert "set-cookie" not in r.headers  # the task may not set the master's cookie


async def test_an_unauthenticated_port_needs_no_login_and_still_gets_none(world: World) -> None:
    m = world.m
    r = await m.http.get(world.url(world.public_port, "x"))
    assert r.status_code == 200 and r.text == "Hello"
    r = await m.http.get(
        world.url(world.public_port, "x"),
        headers={"Cookie": "auth=secret-token", "Authorization": "Bearer secret-token"},
    )
    assert r.status_code == 200
    assert all(b"secret-token" not in h for h in world.public.heads)
    # the others stay closed
    assert (await m.http.get(world.url(world.http.port))).status_code == 401


async def test_ports_not_declared_and_tasks_that_do_not_exist(world: World) -> None:
    m = world.m
    undeclared = free_port()
    r = await m.http.get(world.url(undeclared), headers=world.owner)
    assert r.status_code == 404 and "proxy_ports" in r.json()["message"]
    r = await m.http.get(f"/proxy/{world.task}x:{world.http.port}/", headers=world.owner)
    assert r.status_code == 404
    # a stranger learns nothing before logging in
    assert (await m.http.get(world.url(undeclared))).status_code == 401
    # the bare task id of a trial names no service (no port has default_service_id)
    assert (await m.http.get(world.url(None), headers=world.owner)).status_code == 404


async def test_a_tcp_port_is_a_websocket_of_raw_bytes(world: World) -> None:
    url = world.m.ws_url + world.url(world.tcp_port)
    async with websockets.connect(url, additional_headers=world.owner) as ws:
        await ws.send("Hola")  # Determined's e2e test sends text and gets it back
        assert await ws.recv() == b"Hola"
        await ws.send(b"\x00\x01binary")
        assert await ws.recv() == b"\x00\x01binary"
    with pytest.raises(websockets.InvalidStatus):
        async with websockets.connect(url):  # no login: refused before the upgrade
            pass


async def test_the_real_clients_tunnel(world: World, tmp_path: Path) -> None:
    """`python -m determined.cli.tunnel --listener PORT --auth MASTER TASK:PORT` of
    determined==0.38.1, as Determined's e2e test and its docs use it, then plain TCP."""
    if not DET_PYTHON.exists():
        pytest.skip("the determined==0.38.1 client venv is missing (.ci/run creates .venv-det)")
    listen = free_port()
    env = {
        **os.environ,
        "DET_USER": "owner",
        "DET_PASS": PASSWORD,
        "DET_DEBUG_CONFIG_PATH": str(tmp_path / "detcfg"),
    }
    service = f"{world.task}:{world.tcp_port}"
    argv = [str(DET_PYTHON), "-m", "determined.cli.tunnel", "--listener", str(listen)]
    proc = subprocess.Popen(
        [*argv, "--auth", world.m.url, service],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        await eventually(lambda: _listening(listen, proc), timeout=60)
        assert await asyncio.to_thread(_round_trip, listen, b"through the tunnel") == (
            b"through the tunnel"
        )
    finally:
        proc.terminate()
        out = await asyncio.to_thread(proc.communicate, timeout=10)
        print(out[0].decode(errors="replace"))


async def _listening(port: int, proc: subprocess.Popen[bytes]) -> bool:
    assert proc.poll() is None, f"the tunnel exited with {proc.returncode}"
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _round_trip(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(data)
        got = b""
        while len(got) < len(data):
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        return got


async def test_queued_and_ended_tasks(start_master: StartMaster, agents: list[FakeAgent]) -> None:
    m = await start_master()
    port = free_port()
    config = experiment_yaml("q") + f"\nenvironment:\n  proxy_ports: [{{proxy_port: {port}}}]\n"
    r = await m.post(
        "/api/v1/experiments", {"config": config, "modelDefinition": [], "activate": True}
    )
    exp_id = r["experiment"]["id"]

    async def trial() -> dict[str, Any] | None:
        found = (await m.get(f"/api/v1/experiments/{exp_id}/trials"))["trials"]
        return found[0] if found else None

    task = (await eventually(trial))["taskId"]
    r2 = await m.http.get(f"/proxy/{task}:{port}/", headers=m.admin)
    assert r2.status_code == 503 and "not running yet" in r2.json()["message"]
    agent = await add_agent(m, agents, "a1", 1)
    await allocations_on(agent)
    # placed, but nothing listens on the port: the service did not answer
    r3 = await m.http.get(f"/proxy/{task}:{port}/", headers=m.admin)
    assert r3.status_code == 502
    await m.post(f"/api/v1/experiments/{exp_id}/kill")

    async def ended() -> bool:
        got = await m.http.get(f"/proxy/{task}:{port}/", headers=m.admin)
        return got.status_code == 404 and "ended" in got.json()["message"]

    await eventually(ended, timeout=10)


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("loopback services and the process tunnel: Linux only")


async def test_a_commands_declared_port(start_master: StartMaster, agents: list[FakeAgent]) -> None:
    """Not only trials: a command (and so a generic task, which is one underneath) declares
    ports the same way."""
    m = await start_master()
    agent = await add_agent(m, agents, "a1", 1)
    async with servers() as (http, _, _):
        config = {
            "entrypoint": ["python3", "-m", "http.server"],
            "resources": {"slots": 0},
            "environment": {"proxy_ports": [{"proxy_port": http.port}]},
        }
        task = (await m.post("/api/v1/commands", {"config": config}))["command"]["id"]
        await allocations_on(agent)
        r = await m.http.get(f"/proxy/{task}:{http.port}/x", headers=m.admin)
        assert r.status_code == 200 and r.text == "Hello"
        r = await m.http.get(f"/proxy/{task}:{http.port + 1}/x", headers=m.admin)
        assert r.status_code == 404


async def test_our_det_publishes_the_first_trials_port(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path
) -> None:
    """`det experiment create config.yaml -f -p LOCAL:PORT` (Determined's `--publish`)."""
    m = await start_master()
    await add_agent(m, agents, "a1", 1)
    async with servers() as (http, tcp_port, public):
        config = tmp_path / "ports.yaml"
        config.write_text(ports_yaml(http.port, tcp_port, public.port))
        listen = free_port()
        det = Path(sys.executable).parent / "det"
        env = {
            **os.environ,
            "DET_USER": "admin",
            "DET_PASS": PASSWORD,
            "DET_DEBUG_CONFIG_PATH": str(tmp_path / "detcfg"),
        }
        argv = [str(det), "-m", m.url, "experiment", "create", str(config), "-f"]
        proc = subprocess.Popen(
            [*argv, "-p", f"{listen}:{tcp_port}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            await eventually(lambda: _listening(listen, proc), timeout=60)
            got = await asyncio.to_thread(_round_trip, listen, b"published")
            assert got == b"published"
        finally:
            proc.terminate()
            out = await asyncio.to_thread(proc.communicate, timeout=10)
            print(out[0].decode(errors="replace"))
