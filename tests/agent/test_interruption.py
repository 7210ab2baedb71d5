"""Interruption notices: parsing, the AWS and GCE probes against a fake metadata server, the
watch loop, the settings, and the daemon telling the master (a fake one) at once."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.config import ConfigError, load_settings
from agent.daemon import Daemon
from agent.devices import artificial_devices
from agent.interruption import (
    AWS_METADATA_URL,
    GCP_METADATA_URL,
    AwsSpotProbe,
    GcePreemptionProbe,
    MetadataError,
    Notice,
    make_probe,
    parse_instance_action,
    parse_preempted,
    watch,
)
from agent.protocol import InterruptionNotice, decode_to_master, encode
from agent.runtimes.process import ProcessRuntime
from tests.support.fake_master import fake_master
from tests.support.fake_metadata import FakeMetadata

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def metadata() -> Any:
    with FakeMetadata("i-0abc", "vm-one") as fake:
        yield fake


class TestParsing:
    @pytest.mark.parametrize(
        ("status", "body", "expected"),
        [
            (404, b"Not Found", None),
            (
                200,
                b'{"action": "terminate", "time": "2025-03-01T12:02:00Z"}',
                Notice("aws", "terminate", NOW + timedelta(minutes=2)),
            ),
            (
                200,
                b'{"action": "stop", "time": "2025-03-01T12:02:00"}',
                Notice("aws", "stop", NOW + timedelta(minutes=2)),
            ),
            (200, b"not json", Notice("aws", "terminate", None)),
            (200, b'{"time": 5}', Notice("aws", "terminate", None)),
        ],
    )
    def test_aws_instance_action(self, status: int, body: bytes, expected: Notice | None):
        assert parse_instance_action(status, body) == expected

    def test_aws_other_statuses_are_errors(self):
        with pytest.raises(MetadataError, match="HTTP 500"):
            parse_instance_action(500, b"")

    @pytest.mark.parametrize(
        ("body", "noticed"), [(b"FALSE", False), (b"TRUE", True), (b"true\n", True), (b"", False)]
    )
    def test_gce_preempted(self, body: bytes, noticed: bool):
        notice = parse_preempted(200, body, NOW)
        if noticed:
            assert notice == Notice("gcp", "preempt", NOW + timedelta(seconds=30))
        else:
            assert notice is None

    def test_gce_refusal_is_an_error(self):
        with pytest.raises(MetadataError, match="HTTP 403"):
            parse_preempted(403, b"", NOW)


class TestAwsProbe:
    def test_no_notice_then_notice(self, metadata: FakeMetadata):
        probe = AwsSpotProbe(metadata.url)
        assert probe.check() is None
        at = datetime(2030, 1, 1, 0, 2, tzinfo=UTC)
        metadata.notice("terminate", at=at)
        assert probe.check() == Notice("aws", "terminate", at)

    def test_the_token_is_kept_until_it_is_about_to_expire(self, metadata: FakeMetadata):
        now = [0.0]
        probe = AwsSpotProbe(metadata.url, token_ttl_s=120, clock=lambda: now[0])
        for _ in range(3):
            probe.check()
        puts = [r for r in metadata.requests if r[0] == "PUT"]
        assert len(puts) == 1
        now[0] = 61.0  # within a minute of the TTL: renewed before use
        probe.check()
        assert len([r for r in metadata.requests if r[0] == "PUT"]) == 2

    def test_a_refused_token_is_replaced_once(self, metadata: FakeMetadata):
        probe = AwsSpotProbe(metadata.url)
        probe.check()
        metadata.expire_tokens()
        assert probe.check() is None
        methods = [m for m, _ in metadata.requests]
        assert methods == ["PUT", "GET", "GET", "PUT", "GET"]

    def test_the_fake_refuses_requests_without_a_token(self, metadata: FakeMetadata):
        import urllib.error
        import urllib.request

        url = metadata.url + "/latest/meta-data/instance-id"
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(url, timeout=2)
        assert err.value.code == 401

    def test_an_unreachable_server_is_an_error(self, metadata: FakeMetadata):
        url = metadata.url
        metadata.stop()
        with pytest.raises(MetadataError):
            AwsSpotProbe(url, timeout_s=0.5).check()


class TestGceProbe:
    def test_no_notice_then_notice(self, metadata: FakeMetadata):
        probe = GcePreemptionProbe(metadata.url, now=lambda: NOW)
        assert probe.check() is None
        metadata.notice()
        assert probe.check() == Notice("gcp", "preempt", NOW + timedelta(seconds=30))
        assert metadata.requests[-1] == ("GET", "/computeMetadata/v1/instance/preempted")


class TestSettings:
    def test_default_is_no_watch_and_no_probe(self, monkeypatch: pytest.MonkeyPatch):
        monkeypatch.delenv("DET_INTERRUPTION_WATCH", raising=False)
        monkeypatch.delenv("DET_METADATA_URL", raising=False)
        settings = load_settings(master_host="m")
        assert settings.interruption_watch == "none"
        assert settings.metadata_url is None
        assert make_probe(settings) is None

    def test_the_cloud_address_is_the_default_only_when_watching(self):
        aws = make_probe(load_settings(master_host="m", interruption_watch="aws"))
        gcp = make_probe(load_settings(master_host="m", interruption_watch="gcp"))
        assert isinstance(aws, AwsSpotProbe) and aws.base_url == AWS_METADATA_URL
        assert isinstance(gcp, GcePreemptionProbe) and gcp.base_url == GCP_METADATA_URL

    def test_environment_sets_the_watch(self, monkeypatch: pytest.MonkeyPatch):
        monkeypatch.setenv("DET_INTERRUPTION_WATCH", "gcp")
        monkeypatch.setenv("DET_METADATA_URL", "http://127.0.0.1:9/")
        monkeypatch.setenv("DET_INTERRUPTION_POLL_INTERVAL", "0.5")
        settings = load_settings(master_host="m")
        probe = make_probe(settings)
        assert isinstance(probe, GcePreemptionProbe)
        assert probe.base_url == "http://127.0.0.1:9"
        assert settings.interruption_poll_interval == 0.5

    @pytest.mark.parametrize(
        ("key", "value", "error"),
        [
            ("interruption_watch", "azure", "interruption_watch"),
            ("metadata_url", "169.254.169.254", "metadata_url: must be an http"),
            ("interruption_poll_interval", 0, "interruption_poll_interval"),
        ],
    )
    def test_bad_values(self, key: str, value: Any, error: str):
        with pytest.raises(ConfigError, match=error):
            load_settings(master_host="m", **{key: value})


class _Scripted:
    """A probe that fails, then says nothing, then gives a notice."""

    def __init__(self, answers: list[Notice | Exception | None]) -> None:
        self.answers = answers
        self.calls = 0

    def check(self) -> Notice | None:
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        if isinstance(answer, Exception):
            raise answer
        return answer


class TestWatch:
    async def test_failures_are_retried_and_the_first_notice_ends_it(
        self, caplog: pytest.LogCaptureFixture
    ):
        notice = Notice("aws", "terminate", NOW)
        probe = _Scripted([MetadataError("down"), MetadataError("down"), None, notice])
        seen: list[Notice] = []
        assert await watch(probe, 0.001, seen.append) == notice
        assert seen == [notice] and probe.calls == 4
        warnings = [r for r in caplog.records if "cannot look" in r.getMessage()]
        assert len(warnings) == 1, "a run of failures is logged once"


class TestProtocol:
    def test_the_notice_round_trips(self):
        message = InterruptionNotice(cloud="aws", action="terminate", deadline=NOW)
        frame = encode(message)
        assert json.loads(frame) == {
            "InterruptionNotice": {
                "cloud": "aws",
                "action": "terminate",
                "deadline": "2025-03-01T12:00:00Z",
            }
        }
        assert decode_to_master(frame) == message
        assert decode_to_master('{"InterruptionNotice": {}}') == InterruptionNotice()


async def _daemon_against(port: int, work_dir: Path, **extra: Any) -> tuple[Daemon, Any]:
    settings = load_settings(
        master_host="127.0.0.1",
        master_port=port,
        agent_id="spot-agent",
        artificial_slots=1,
        work_dir=work_dir,
        container_runtime="process",
        agent_reconnect_attempts=20,
        agent_reconnect_backoff=0.1,
        **extra,
    )
    runtime = ProcessRuntime(settings.effective_work_dir / "process")
    daemon = Daemon(settings, runtime, artificial_devices(1, settings.agent_id))
    return daemon, asyncio.ensure_future(daemon.run())


class TestDaemon:
    @pytest.mark.parametrize("cloud", ["aws", "gcp"])
    async def test_a_notice_goes_to_the_master_at_once_and_again_after_a_reconnect(
        self, cloud: str, metadata: FakeMetadata, tmp_path: Path
    ):
        async with fake_master() as master:
            daemon, task = await _daemon_against(
                master.port,
                tmp_path / "agent",
                interruption_watch=cloud,
                metadata_url=metadata.url,
                interruption_poll_interval=0.05,
            )
            try:
                first = await master.session(1)
                metadata.notice("terminate", at=datetime(2030, 1, 1, tzinfo=UTC))
                got = await first.wait_for(lambda m: isinstance(m, InterruptionNotice), 5)
                assert isinstance(got, InterruptionNotice) and got.cloud == cloud
                assert got.action == ("terminate" if cloud == "aws" else "preempt")
                assert got.deadline is not None
                await master.restart()  # a master that restarts forgets; it is told again
                second = await master.session(2)
                again = await second.wait_for(lambda m: isinstance(m, InterruptionNotice), 5)
                assert again == got
            finally:
                daemon.stop()
                await asyncio.wait_for(task, 15)

    async def test_without_a_watch_the_metadata_server_is_never_asked(
        self, metadata: FakeMetadata, tmp_path: Path
    ):
        async with fake_master() as master:
            daemon, task = await _daemon_against(master.port, tmp_path / "agent")
            try:
                await master.session(1)
                assert daemon.probe is None
            finally:
                daemon.stop()
                await asyncio.wait_for(task, 15)
        assert metadata.requests == []
