"""How many Docker API calls one task costs the docker runtime, counted on the real engine.

Each call is a round trip through dockerd's socket, which serialises much of its work; the
throughput of trivial tasks (benchmarks/task_throughput.py) is bounded by these counts. A task
started, waited for and removed by the runtime that created it needs exactly four calls, one
fewer than the SDK's own create/start/wait/remove (its create inspects the new container).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from agent.runtimes import docker_available
from agent.runtimes.base import LaunchFailed, RunRequest
from tests.support.docker_image import ensure_test_image

pytest.importorskip("docker")
from agent.runtimes.docker import DockerRuntime

pytestmark = pytest.mark.skipif(
    not docker_available(), reason="no Docker engine answers on this machine"
)
AGENT = "docker-call-count-tests"
PER_TASK = Counter(
    {
        "POST /containers/create": 1,
        "POST /containers/{id}/start": 1,
        "POST /containers/{id}/wait": 1,
        "DELETE /containers/{id}": 1,
    }
)


def _endpoint(method: str, url: str) -> str:
    path = re.sub(r"^/v[\d.]+", "", url.split("?")[0])
    return f"{method} {re.sub(r'/containers/[0-9a-f]{64}', '/containers/{id}', path)}"


@pytest.fixture
async def counted(monkeypatch: pytest.MonkeyPatch):
    """A runtime whose every request to dockerd is counted by endpoint."""
    runtime = DockerRuntime()
    api = runtime._docker().api
    calls: Counter[str] = Counter()
    send = api.send

    def counting_send(request, **kwargs):
        calls[_endpoint(request.method, request.path_url)] += 1
        return send(request, **kwargs)

    monkeypatch.setattr(api, "send", counting_send)
    yield runtime, calls
    for found in await runtime.find(AGENT):
        await runtime.remove(found.container_id)
    await runtime.close()


def _request(tmp: Path, python: str = "") -> RunRequest:
    image = ensure_test_image()
    container_id = f"n{uuid.uuid4().hex[:12]}-0"
    return RunRequest(
        container_id=container_id,
        agent_id=AGENT,
        argv=("python3", "-c", "pass"),
        run_dir=tmp / container_id,
        image=image.name,
        mounts=image.mounts,
        python=python,
    )


async def _one_task(runtime: DockerRuntime, request: RunRequest) -> int:
    await runtime.start(request)
    code = await runtime.wait(request.container_id)
    await runtime.remove(request.container_id)
    return code


# The test image runs the host's interpreter, mounted at its host path.
@pytest.mark.parametrize("python", ["", "python3", sys.executable])
async def test_a_task_after_the_agents_listing_costs_four_calls(
    counted, tmp_path: Path, python: str
) -> None:
    runtime, calls = counted
    await runtime.find(AGENT)  # what the agent does before it starts any container
    assert await _one_task(runtime, _request(tmp_path, python)) == 0  # image, its Env: cached
    calls.clear()
    assert await _one_task(runtime, _request(tmp_path, python)) == 0
    assert calls == PER_TASK


async def test_before_a_listing_a_start_asks_dockerd_whether_the_id_is_taken(
    counted, tmp_path: Path
) -> None:
    runtime, calls = counted
    other = DockerRuntime()  # another agent process on the same engine started it
    request = _request(tmp_path)
    try:
        await other.start(request)
        await other.wait(request.container_id)
        assert await _one_task(runtime, _request(tmp_path)) == 0
        assert calls["GET /containers/json"] == 1
        with pytest.raises(LaunchFailed, match="already exists"):
            await runtime.start(request)
    finally:
        await other.remove(request.container_id)
        await other.close()


async def test_the_calls_of_one_task_after_another_reuse_one_connection(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The SDK alone opens a connection to dockerd per URL, so per call of every task: four
    connects, accepts and closes a task where one kept-alive connection serves them all."""
    from docker.transport.unixconn import UnixHTTPConnectionPool

    opened: list[object] = []
    new_conn = UnixHTTPConnectionPool._new_conn

    def counting_new_conn(pool):
        opened.append(pool)
        return new_conn(pool)

    monkeypatch.setattr(UnixHTTPConnectionPool, "_new_conn", counting_new_conn)
    runtime = DockerRuntime()
    try:
        runtime._docker()  # the client's own start asks the engine's version
        opened.clear()
        await runtime.find(AGENT)
        for _ in range(3):
            assert await _one_task(runtime, _request(tmp_path)) == 0
        assert len(opened) == 1, f"{len(opened)} connections for 13 calls"
    finally:
        await runtime.close()


async def test_the_log_of_a_task_that_ends_at_once_is_one_request(counted, tmp_path: Path) -> None:
    """The agent waits on a task while it reads its output. One that has ended within
    FOLLOW_AFTER_S is read once: its whole log, both streams, in one plain request (a follow
    and the catch-up its end needs were two, and a log watcher in dockerd)."""
    runtime, calls = counted
    await runtime.find(AGENT)
    request = _request(tmp_path)
    script = "import sys; print('out 1'); sys.stderr.write('err'); sys.stdout.write('no newline')"
    request = dataclasses.replace(request, argv=("python3", "-c", script))
    await runtime.start(request)
    calls.clear()
    out: dict[str, bytes] = {"stdout": b"", "stderr": b""}

    async def read() -> None:
        async for stream, chunk in runtime.logs(request.container_id):
            out[stream] += chunk

    code, _ = await asyncio.gather(runtime.wait(request.container_id), read())
    assert code == 0
    assert out == {"stdout": b"out 1\nno newline", "stderr": b"err"}
    assert calls["GET /containers/{id}/logs"] == 1
    await runtime.remove(request.container_id)
