"""The master's proxy hop alone: `python benchmarks/proxy_hop.py driver [ROUNDS]`.

CPU per request of one hop in front of a stand-in service that answers Jupyter's
`/api/status` bytes at once: uvicorn + the ASGI proxy ("asgi"), the master's front protocol
("front", controlplane/api/proxy_front.py) and a zero-work splice (benchmarks/splice.py), the
target cached (no database), a client of raw keep-alive sockets, 1 and 8 connections. Without
Jupyter, the gate and httpx in the picture, what each hop costs by itself is what moves. Wrap
it in `flock /tmp/bench.lock` on a shared machine. Figures: docs/interactive.md, "Numbers".
"""

import asyncio
import os
import socket
import subprocess
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "driver"
TASK = "0b8f9a3e-4c59-4a57-9d7e-2f0f2b6c1a11"
BODY = (
    b'{"started": "2026-11-26T11:00:00.000000Z", '
    b'"last_activity": "2026-11-26T11:00:00.000000Z", "connections": 0, "kernels": 0}'
)
RESP = (
    b"HTTP/1.1 200 OK\r\nServer: TornadoServer/6.4\r\nContent-Type: application/json\r\n"
    b"Date: Thu, 26 Nov 2026 11:00:00 GMT\r\nX-Content-Type-Options: nosniff\r\n"
    b"Content-Security-Policy: frame-ancestors 'self'; report-uri /api/security/csp-report\r\n"
    b"Access-Control-Allow-Headers: accept, content-type, authorization, x-xsrftoken\r\n"
    b'Etag: "abc"\r\nContent-Length: %d\r\n\r\n%s' % (len(BODY), BODY)
)


class Svc(asyncio.Protocol):
    def connection_made(self, t):
        self.t = t
        self.buf = b""

    def data_received(self, d):
        self.buf += d
        while b"\r\n\r\n" in self.buf:
            _, self.buf = self.buf.split(b"\r\n\r\n", 1)
            self.t.write(RESP)


def cpu(pid):
    from pathlib import Path

    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


async def service(port):
    loop = asyncio.get_running_loop()
    await loop.create_server(Svc, "127.0.0.1", port)
    await asyncio.Event().wait()


def master(port, svc_port, front):
    sys.path.insert(0, os.getcwd())
    from datetime import UTC, datetime

    import uvicorn

    from controlplane.api import proxy
    from controlplane.api import proxy_upstream as upstream
    from controlplane.api.proxy_front import front_protocol

    class App:
        state = {
            "proxy_pool": upstream.Pool(),
            "proxy_targets": proxy.TargetCache(ttl_s=3600),
            "proxy_activity": proxy.ActivityBoard(),
            "api": type("C", (), {"clock": staticmethod(lambda: datetime.now(UTC))})(),
        }

    app = App()
    app.state["proxy_targets"].put(
        (b"authorization:Bearer tok", TASK, False),
        proxy.Target(TASK, "NOTEBOOK", f"127.0.0.1:{svc_port}", 1, "s" * 43),
    )

    async def asgi(scope, receive, send):
        scope["litestar_app"] = app
        await proxy.serve(scope, receive, send)

    kw = {"http": front_protocol(app)} if front else {}
    uvicorn.run(
        asgi,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        access_log=False,
        **kw,
    )


async def client(port, n_conn, seconds):
    req = (
        f"GET /proxy/{TASK}/api/status HTTP/1.1\r\nHost: m\r\nAuthorization: Bearer tok\r\n"
        f"Accept: */*\r\nUser-Agent: python-httpx/0.28\r\nAccept-Encoding: gzip\r\n\r\n"
    ).encode()
    count = 0
    end = time.monotonic() + seconds

    async def one():
        nonlocal count
        r, w = await asyncio.open_connection("127.0.0.1", port)
        while time.monotonic() < end:
            w.write(req)
            head = await r.readuntil(b"\r\n\r\n")
            i = head.lower().index(b"content-length:")
            n = int(head[i + 15 : head.index(b"\r\n", i)])
            await r.readexactly(n)
            count += 1
        w.close()

    await asyncio.gather(*(one() for _ in range(n_conn)))
    return count


def free():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


if MODE == "service":
    asyncio.run(service(int(sys.argv[2])))
elif MODE == "master":
    master(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "front")
elif MODE == "driver":
    svc_port = free()
    svc = subprocess.Popen([sys.executable, __file__, "service", str(svc_port)])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    results = {"front": [], "asgi": [], "splice": []}
    try:
        for _ in range(rounds):
            for conns in (1, 8):
                for kind in ("asgi", "front", "splice"):
                    port = free()
                    if kind == "splice":
                        m = subprocess.Popen(
                            [
                                sys.executable,
                                os.path.join(os.getcwd(), "benchmarks/splice.py"),
                                str(port),
                                f"127.0.0.1:{svc_port}",
                            ]
                        )
                    else:
                        m = subprocess.Popen(
                            [sys.executable, __file__, "master", str(port), str(svc_port), kind]
                        )
                    for _ in range(300):
                        try:
                            socket.create_connection(("127.0.0.1", port), 0.2).close()
                            break
                        except OSError:
                            time.sleep(0.1)
                    asyncio.run(client(port, 4, 1.0))  # warm
                    c0, s0 = cpu(m.pid), cpu(svc.pid)
                    t0 = time.monotonic()
                    n = asyncio.run(client(port, conns, 3.0))
                    dt = time.monotonic() - t0
                    c1, s1 = cpu(m.pid), cpu(svc.pid)
                    results[kind].append(((c1 - c0) * 1000 / n, n / dt))
                    print(
                        f"{conns} conns {kind:6} hop {1000 * (c1 - c0) / n:.3f} ms/req, "
                        f"service {1000 * (s1 - s0) / n:.3f} ms/req, {n / dt:.0f} req/s, "
                        f"load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
                    m.terminate()
                    m.wait()
    except BaseException:
        m.kill()
        raise
    finally:
        svc.kill()
