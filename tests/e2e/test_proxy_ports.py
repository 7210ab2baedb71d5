"""Determined's port-proxy fixture (e2e_tests/tests/fixtures/ports-proxy; ours, in
tests/fixtures/determined/, is written to its behaviour, not copied) on `det deploy local`
(process runtime): its trial's HTTP server on
8000 answers through `/proxy/{task}:8000/`, its TCP echo on 6000 through a WebSocket to
`/proxy/{task}:6000/` (Determined's test_experiment_proxy_simple, both parametrizations),
through the tunnel the real client's `det experiment create … -f -p LOCAL:6000` keeps open (its
test_experiment_proxy_ray_publish) and through its `python -m determined.cli.tunnel --listener
… --auth` (test_experiment_proxy_ray_tunnel) (issue 39, finding 5).

The fixture listens on fixed ports 8000 and 6000 of the machine: the test is skipped, saying
so, when either is taken.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from tests.e2e.conftest import Deploy, free_port, wait_for

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "determined" / "ports-proxy"
DET_PYTHON = Path(os.environ.get("DETERMINED_CLIENT_VENV", REPO / ".venv-det")) / "bin" / "python"

pytestmark = pytest.mark.slow


def _taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_determineds_ports_proxy_fixture(deploy: Deploy, tmp_path: Path) -> None:
    taken = [p for p in (8000, 6000) if _taken(p)]
    if taken:
        pytest.skip(f"the fixture's fixed ports {taken} are in use on this machine")
    # slots_per_trial 2: one agent of two slots runs one of the grid's trials at a time
    d = deploy(agents=1, slots=2)
    published = free_port()
    creating = None
    if DET_PYTHON.exists():
        # Determined's test_experiment_proxy_ray_publish: `det e create … -f -p LOCAL:PORT`
        # follows the first trial's logs with a tunnel to its port open meanwhile.
        argv = [str(DET_PYTHON.parent / "det"), "-m", d.url, "experiment", "create"]
        creating = subprocess.Popen(
            [*argv, str(FIXTURE / "config.yaml"), str(FIXTURE), "-f", "-p", f"{published}:6000"],
            env={**d.env, "DET_DEBUG_CONFIG_PATH": str(tmp_path / "real-det")},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        wait_for(lambda: d.get("/api/v1/experiments")["experiments"], 60, "the experiment")
    else:
        done = d.det("experiment", "create", str(FIXTURE / "config.yaml"), str(FIXTURE))
        assert done.returncode == 0, done.stdout + done.stderr
    exp_id = max(e["id"] for e in d.get("/api/v1/experiments", limit=1000)["experiments"])
    try:
        trial = d.trial_of(exp_id, timeout=60)
        wait_for(
            lambda: any("Server listening" in line for line in d.trial_logs(trial["id"])),
            120,
            "the fixture's 'Server listening' line",
        )
        task = trial["taskId"]

        # proxy_tcp: false: plain HTTP (Determined's test does `sess.get(proxy_url)`)
        r = d.http.get(f"/proxy/{task}:8000/")
        assert r.status_code == 200 and r.text == "Hello", r.text
        assert httpx.get(f"{d.url}/proxy/{task}:8000/").status_code == 401

        # proxy_tcp: true: the WebSocket carries the bytes (Determined's test sends "Hola")
        ws_url = d.url.replace("http", "ws", 1) + f"/proxy/{task}:6000/"
        with connect(ws_url, additional_headers={"Authorization": f"Bearer {d.token}"}) as ws:
            ws.send("Hola")
            assert ws.recv(timeout=30) == b"Hola"

        if creating is not None:
            _echo_through(published, creating)
            _through_the_real_tunnel(d.url, f"{task}:6000", d.env, tmp_path)
    finally:
        d.post(f"/api/v1/experiments/{exp_id}/kill")
        if creating is not None:
            creating.terminate()  # it follows the logs until the experiment ends
            creating.communicate(timeout=30)


def _echo_through(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not _taken(port):
        assert proc.poll() is None, proc.communicate()[0].decode(errors="replace")
        assert time.monotonic() < deadline, f"nothing listened on {port}"
        time.sleep(0.2)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"through the tunnel")
        got = b""
        while len(got) < len(b"through the tunnel"):
            chunk = s.recv(4096)
            assert chunk, f"the tunnel closed after {got!r}"
            got += chunk
    assert got == b"through the tunnel"


def _through_the_real_tunnel(
    master: str, service: str, env: dict[str, str], tmp_path: Path
) -> None:
    listen = free_port()
    proc = subprocess.Popen(
        [
            *(str(DET_PYTHON), "-m", "determined.cli.tunnel", "--listener", str(listen)),
            *("--auth", master, service),
        ],
        env={**env, "DET_DEBUG_CONFIG_PATH": str(tmp_path / "real-det")},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        _echo_through(listen, proc)
    finally:
        proc.terminate()
        proc.wait(10)
