"""A thin HTTP shim in front of moto that answers EC2 capacity errors for chosen subnets.

moto never runs out of capacity. Real EC2 answers `InsufficientInstanceCapacity` per
availability zone: RunInstances fails with it, and an instant EC2 Fleet skips the override and
lists it under `Errors` while it fills the target from the next override. The shim does the
same on the wire, on 127.0.0.1, so the real boto3 client and our XML parsing see what AWS sends:

- `RunInstances` / `RequestSpotInstances` naming an exhausted subnet get an HTTP 500 error
  answer with the code;
- `CreateFleet`: overrides naming an exhausted subnet are removed from the request before it
  reaches moto, and come back as `errorSet` items; with none left, the answer has no instances.

Everything else is forwarded unchanged. `exhausted` maps subnet id → error code; tests change
it while the shim runs. `calls` records each action's parameters.
"""

from __future__ import annotations

import re
import threading
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

from tests.support.moto_server import assert_loopback

_OVERRIDE = re.compile(r"^LaunchTemplateConfigs\.(\d+)\.Overrides\.(\d+)\.(.+)$")
_NS = "http://ec2.amazonaws.com/doc/2016-11-15/"


class Ec2CapacityShim:
    def __init__(self, upstream: str) -> None:
        assert_loopback(upstream)
        self.upstream = upstream.rstrip("/")
        self.exhausted: dict[str, str] = {}
        self.calls: list[tuple[str, dict[str, str]]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Ec2CapacityShim:
        shim = self

        class Handler(_Handler):
            state = shim

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def actions(self, name: str) -> list[dict[str, str]]:
        with self._lock:
            return [params for action, params in self.calls if action == name]

    # -- the rewriting ----------------------------------------------------------------------

    def handle(self, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        params = dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))
        action = params.get("Action", "")
        with self._lock:
            self.calls.append((action, params))
            exhausted = dict(self.exhausted)
        if action in ("RunInstances", "RequestSpotInstances"):
            subnet = params.get("NetworkInterface.1.SubnetId") or params.get(
                "LaunchSpecification.NetworkInterface.1.SubnetId", ""
            )
            if subnet in exhausted:
                return 500, _error(
                    exhausted[subnet],
                    f"We currently do not have sufficient "
                    f"capacity in the Availability Zone of {subnet} (shim).",
                )
        if action == "CreateFleet":
            return self._create_fleet(headers, params, exhausted)
        return self._forward(headers, body)

    def _create_fleet(
        self, headers: dict[str, str], params: dict[str, str], exhausted: dict[str, str]
    ) -> tuple[int, bytes]:
        overrides: dict[tuple[str, str], dict[str, str]] = {}
        rest: dict[str, str] = {}
        for key, value in params.items():
            match = _OVERRIDE.match(key)
            if match:
                overrides.setdefault((match[1], match[2]), {})[match[3]] = value
            else:
                rest[key] = value
        kept: dict[str, list[dict[str, str]]] = {}
        refused: list[tuple[dict[str, str], str]] = []
        for (config, _), fields in sorted(
            overrides.items(), key=lambda kv: (kv[0][0], int(kv[0][1]))
        ):
            subnet = fields.get("SubnetId", "")
            if subnet in exhausted:
                refused.append((fields, exhausted[subnet]))
            else:
                kept.setdefault(config, []).append(fields)
        lifecycle = (
            "spot"
            if rest.get("TargetCapacitySpecification.DefaultTargetCapacityType") == "spot"
            else "on-demand"
        )
        errors = "".join(_error_item(fields, code, lifecycle) for fields, code in refused)
        if not any(kept.values()):
            xml = (
                f'<CreateFleetResponse xmlns="{_NS}"><requestId>shim</requestId>'
                f"<fleetId>fleet-shim</fleetId><errorSet>{errors}</errorSet>"
                f"<fleetInstanceSet/></CreateFleetResponse>"
            )
            return 200, xml.encode()
        for config, entries in kept.items():
            for n, fields in enumerate(entries, start=1):
                for name, value in fields.items():
                    rest[f"LaunchTemplateConfigs.{config}.Overrides.{n}.{name}"] = value
        status, answer = self._forward(headers, urllib.parse.urlencode(rest).encode())
        if status == 200 and errors:
            text = answer.decode()
            text = re.sub(r"<errorSet\s*/>", "", text)
            text = text.replace("</fleetId>", f"</fleetId><errorSet>{errors}</errorSet>", 1)
            answer = text.encode()
        return status, answer

    def _forward(self, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        wanted = {
            k: v
            for k, v in headers.items()
            if k.lower()
            in ("content-type", "authorization", "x-amz-date", "x-amz-target", "user-agent")
        }
        request = urllib.request.Request(
            self.upstream + "/", data=body, headers=wanted, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()


def _error(code: str, message: str) -> bytes:
    return (
        f"<Response><Errors><Error><Code>{escape(code)}</Code><Message>{escape(message)}"
        f"</Message></Error></Errors><RequestID>shim</RequestID></Response>"
    ).encode()


def _error_item(fields: dict[str, str], code: str, lifecycle: str) -> str:
    return (
        "<item><launchTemplateAndOverrides><overrides>"
        f"<instanceType>{escape(fields.get('InstanceType', ''))}</instanceType>"
        f"<subnetId>{escape(fields.get('SubnetId', ''))}</subnetId>"
        "</overrides></launchTemplateAndOverrides>"
        f"<lifecycle>{lifecycle}</lifecycle><errorCode>{escape(code)}</errorCode>"
        "<errorMessage>We currently do not have sufficient capacity in the Availability Zone "
        "you requested (shim).</errorMessage></item>"
    )


class _Handler(BaseHTTPRequestHandler):
    state: Ec2CapacityShim
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status, answer = self.state.handle(dict(self.headers.items()), body)
        self.send_response(status)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)
