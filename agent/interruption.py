"""Spot interruption and preemption notices, read from the instance-metadata server.

AWS announces a spot interruption two minutes ahead at `spot/instance-action` (404 until then,
then `{"action": "terminate", "time": "...Z"}`), behind an IMDSv2 session token; GCE sets
`instance/preempted` to TRUE about 30 s before a spot or preemptible VM is stopped. The watch
polls one of them every `interruption_poll_interval` seconds and reports the first notice once.

Nothing here runs unless `interruption_watch` is aws or gcp: a machine that is no cloud VM must
never send requests to 169.254.169.254. The requests bypass any proxy the agent's environment
names, since the metadata server is only reachable from the machine itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from agent.config import AgentSettings

log = logging.getLogger("agent.interruption")

AWS_METADATA_URL = "http://169.254.169.254"
GCP_METADATA_URL = "http://metadata.google.internal"
AWS_TOKEN_PATH = "/latest/api/token"
AWS_INSTANCE_ACTION_PATH = "/latest/meta-data/spot/instance-action"
GCE_PREEMPTED_PATH = "/computeMetadata/v1/instance/preempted"
AWS_TOKEN_TTL_HEADER = "X-aws-ec2-metadata-token-ttl-seconds"
AWS_TOKEN_HEADER = "X-aws-ec2-metadata-token"
GCE_FLAVOR = {"Metadata-Flavor": "Google"}
# GCE stops a preempted VM about 30 s after setting `preempted`; it gives no time of its own.
GCE_NOTICE_S = 30
REQUEST_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Notice:
    """The cloud takes the machine away: `action` at `deadline` (None where it does not say)."""

    cloud: str
    action: str
    deadline: datetime | None


class MetadataError(Exception):
    """The metadata server could not be asked, or answered something unexpected."""


class Probe(Protocol):
    """One look at the metadata server."""

    def check(self) -> Notice | None:
        """The notice if there is one, else None. Blocks on the network (at most a few
        seconds); raises MetadataError when the server cannot tell."""
        ...


def parse_instance_action(status: int, body: bytes) -> Notice | None:
    """AWS `spot/instance-action`: 404 means no notice; 200 carries it."""
    if status == 404:
        return None
    if status != 200:
        raise MetadataError(f"spot/instance-action answered HTTP {status}")
    try:
        data = json.loads(body)
        action = str(data.get("action") or "terminate")
        when = data.get("time")
        deadline = datetime.fromisoformat(when) if isinstance(when, str) else None
    except (ValueError, AttributeError):
        # A 200 is a notice even when its body is unexpected; acting on it is the safe side.
        return Notice(cloud="aws", action="terminate", deadline=None)
    if deadline is not None and deadline.tzinfo is None:
        deadline = deadline.replace(tzinfo=UTC)
    return Notice(cloud="aws", action=action, deadline=deadline)


def parse_preempted(status: int, body: bytes, now: datetime) -> Notice | None:
    """GCE `instance/preempted`: TRUE once the VM is being preempted."""
    if status != 200:
        raise MetadataError(f"instance/preempted answered HTTP {status}")
    if body.strip().upper() != b"TRUE":
        return None
    return Notice(cloud="gcp", action="preempt", deadline=now + timedelta(seconds=GCE_NOTICE_S))


# A proxy in the agent's environment must not see metadata requests (it could not answer them).
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _request(method: str, url: str, headers: dict[str, str], timeout_s: float) -> tuple[int, bytes]:
    """(status, body) for any HTTP answer; MetadataError when there is none."""
    request = urllib.request.Request(url, method=method, headers=headers)
    try:
        with _OPENER.open(request, timeout=timeout_s) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()
    except (OSError, ValueError) as exc:
        raise MetadataError(f"{method} {url}: {exc}") from exc


class AwsSpotProbe:
    """IMDSv2: a session token (PUT, kept until shortly before it expires), then the GET."""

    def __init__(
        self,
        base_url: str,
        *,
        token_ttl_s: int = 21600,
        timeout_s: float = REQUEST_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token_ttl_s = token_ttl_s
        self.timeout_s = timeout_s
        self.clock = clock
        self._token: str | None = None
        self._token_until = 0.0

    def _fresh_token(self) -> str:
        if self._token is not None and self.clock() < self._token_until:
            return self._token
        status, body = _request(
            "PUT",
            self.base_url + AWS_TOKEN_PATH,
            {AWS_TOKEN_TTL_HEADER: str(self.token_ttl_s)},
            self.timeout_s,
        )
        if status != 200 or not body:
            raise MetadataError(f"the IMDSv2 token request answered HTTP {status}")
        self._token = body.decode().strip()
        # Renew a minute early, so a token never expires between the check and the request.
        self._token_until = self.clock() + max(self.token_ttl_s - 60, self.token_ttl_s / 2)
        return self._token

    def check(self) -> Notice | None:
        for _ in range(2):
            status, body = _request(
                "GET",
                self.base_url + AWS_INSTANCE_ACTION_PATH,
                {AWS_TOKEN_HEADER: self._fresh_token()},
                self.timeout_s,
            )
            if status != 401:
                return parse_instance_action(status, body)
            self._token = None  # expired or revoked early: one more try with a new one
        raise MetadataError("spot/instance-action refused a fresh IMDSv2 token (HTTP 401)")


class GcePreemptionProbe:
    """One GET of `instance/preempted` with the `Metadata-Flavor: Google` header."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = REQUEST_TIMEOUT_S,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.now = now

    def check(self) -> Notice | None:
        url = self.base_url + GCE_PREEMPTED_PATH
        status, body = _request("GET", url, dict(GCE_FLAVOR), self.timeout_s)
        return parse_preempted(status, body, self.now())


def make_probe(settings: AgentSettings) -> Probe | None:
    """The probe `interruption_watch` asks for; None (no requests at all) for `none`."""
    if settings.interruption_watch == "aws":
        return AwsSpotProbe(settings.metadata_url or AWS_METADATA_URL)
    if settings.interruption_watch == "gcp":
        return GcePreemptionProbe(settings.metadata_url or GCP_METADATA_URL)
    return None


async def watch(
    probe: Probe,
    interval_s: float,
    on_notice: Callable[[Notice], None],
) -> Notice:
    """Look every `interval_s` seconds until a notice comes; call `on_notice` with it once.

    A metadata server that cannot be asked is retried at the next look: it is logged once per
    run of failures, so a flaky server does not flood the log.
    """
    failing = False
    while True:
        try:
            notice = await asyncio.to_thread(probe.check)
        except MetadataError as exc:
            if not failing:
                log.warning("cannot look for interruption notices (retrying): %s", exc)
            failing = True
            notice = None
        else:
            if failing:
                log.info("the metadata server answers again")
            failing = False
        if notice is not None:
            on_notice(notice)
            return notice
        await asyncio.sleep(interval_s)
