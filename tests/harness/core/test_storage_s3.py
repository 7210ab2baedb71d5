"""s3 checkpoint storage against moto in server mode on 127.0.0.1, through the real boto3."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

from boto3.s3.transfer import TransferConfig  # noqa: E402

from harness.core import DummyDistributedContext  # noqa: E402
from harness.core._checkpoint import CheckpointContext  # noqa: E402
from harness.core._storage import CheckpointNotFound, StorageError, storage_from_config  # noqa: E402
from harness.core._storage_s3 import S3StorageManager  # noqa: E402
from tests.harness.core.threaded_dist import all_ok, group, run_ranks  # noqa: E402
from tests.harness.fakes import FakeTransport  # noqa: E402

MiB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    saved = {k: os.environ.get(k) for k in ("AWS_DEFAULT_REGION",)}
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def bucket(endpoint: str, request: pytest.FixtureRequest) -> str:
    name = "ckpt-" + request.node.name.lower().replace("_", "-")[:40]
    raw(endpoint).create_bucket(Bucket=name)
    return name


def raw(endpoint: str) -> Any:
    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="k", aws_secret_access_key="s"
    )


def manager(endpoint: str, bucket: str, **kw: Any) -> S3StorageManager:
    cfg = {
        "type": "s3",
        "bucket": bucket,
        "prefix": "exp/1",
        "endpoint_url": endpoint,
        "access_key": "k",
        "secret_key": "s",
        **kw,
    }
    sm = storage_from_config(cfg)
    assert isinstance(sm, S3StorageManager)
    return sm


def ctx_for(sm: S3StorageManager, fake: FakeTransport) -> CheckpointContext:
    return CheckpointContext(DummyDistributedContext(), sm, fake, "t", "t.1", trial_id=1)


def reports(fake: FakeTransport) -> list[dict[str, Any]]:
    return [c.body for c in fake.calls if c.method == "POST" and c.path == "/api/v1/checkpoints"]


def test_roundtrip_with_multipart_parts(endpoint: str, bucket: str, tmp_path: Path) -> None:
    sm = manager(endpoint, bucket)
    # Small parts so a 12 MiB file goes up in three (S3's minimum part is 5 MiB).
    sm.transfer = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)
    fake = FakeTransport()
    ctx = ctx_for(sm, fake)
    big = os.urandom(12 * MiB)
    with ctx.store_path({"steps_completed": 3}) as (path, sid):
        staging = path
        (path / "model.bin").write_bytes(big)
        (path / "sub").mkdir()
        (path / "sub" / "opt.bin").write_bytes(b"o")
    assert not staging.exists()  # the local staging directory is removed once uploaded
    head = raw(endpoint).head_object(Bucket=bucket, Key=f"exp/1/{sid}/model.bin")
    assert head["ETag"].strip('"').endswith("-3")  # a three-part multipart upload
    (body,) = reports(fake)
    assert body["resources"]["model.bin"] == str(12 * MiB) and body["resources"]["sub/"] == "0"
    with ctx.restore_path(sid) as path:
        assert (path / "model.bin").read_bytes() == big
        assert (path / "sub" / "opt.bin").read_bytes() == b"o"
        restored = path
    assert not restored.exists()
    ctx.download(sid, tmp_path / "dl", selector=lambda n: n.startswith("sub/"))
    assert sorted(p.name for p in (tmp_path / "dl").rglob("*")) == ["opt.bin", "sub"]
    ctx.delete(sid, ["model.bin"])
    left = next(c.body for c in fake.calls if c.method == "PATCH")["checkpoints"][0]
    assert set(left["resources"]["resources"]) == {"metadata.json", "sub/", "sub/opt.bin"}
    ctx.delete(sid)
    assert "Contents" not in raw(endpoint).list_objects_v2(Bucket=bucket, Prefix=f"exp/1/{sid}/")


def test_upload_and_pagination(endpoint: str, bucket: str, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(40):
        (src / f"f{i:04d}").write_bytes(b"x")
    sm = manager(endpoint, bucket)
    sm.list_page_size = 7  # several list_objects_v2 pages
    sid = ctx_for(sm, FakeTransport()).upload(src, {"steps_completed": 1})
    files = sm.list_files(sid)
    assert len([n for n in files if n.startswith("f")]) == 40


def test_missing_bucket_is_a_clear_error_and_nothing_is_reported(
    endpoint: str, tmp_path: Path
) -> None:
    fake = FakeTransport()
    ctx = ctx_for(manager(endpoint, "no-such-bucket"), fake)
    with pytest.raises(StorageError, match=r"s3 bucket 'no-such-bucket'.*NoSuchBucket"):  # noqa: SIM117
        with ctx.store_path({"steps_completed": 1}) as (path, _):
            (path / "w").write_text("w")
    assert not reports(fake)


def test_refused_credentials(endpoint: str, bucket: str, tmp_path: Path) -> None:
    from moto.core import set_initial_no_auth_action_count

    fake = FakeTransport()
    ctx = ctx_for(manager(endpoint, bucket, access_key="AKIAWRONG", secret_key="nope"), fake)
    src = tmp_path / "src"
    src.mkdir()
    (src / "w").write_text("w")

    @set_initial_no_auth_action_count(0)
    def attempt() -> None:
        ctx.upload(src, {"steps_completed": 1})

    with pytest.raises(StorageError, match=rf"s3 bucket '{bucket}'.*(InvalidAccessKeyId|403)"):
        attempt()
    assert not reports(fake)


def test_unknown_id_and_hostile_keys(endpoint: str, bucket: str, tmp_path: Path) -> None:
    sm = manager(endpoint, bucket)
    ctx = ctx_for(sm, FakeTransport())
    with (
        pytest.raises(CheckpointNotFound, match="nope not found in s3://"),
        ctx.restore_path("nope"),
    ):
        pass
    raw(endpoint).put_object(Bucket=bucket, Key="exp/1/evil/../../../escape", Body=b"x")
    with pytest.raises(StorageError, match="climbs out"):
        ctx.download("evil", tmp_path / "dst")
    assert not (tmp_path / "escape").exists()


def test_a_file_vanishing_mid_upload(endpoint: str, bucket: str, tmp_path: Path) -> None:
    sm = manager(endpoint, bucket)
    fake = FakeTransport()
    ctx = ctx_for(sm, fake)
    src = tmp_path / "src"
    src.mkdir()
    for name in ("a", "b", "c"):
        (src / name).write_text(name)
    original = sm._put

    def lose_c_as_it_goes(local: Path, key: str) -> None:
        if local.name == "c":
            local.unlink()  # listed and reported-to-be; gone when its upload starts
        original(local, key)

    sm._put = lose_c_as_it_goes  # type: ignore[method-assign]
    with pytest.raises(FileNotFoundError, match="vanished"):
        ctx.upload(src, {"steps_completed": 1})
    assert not reports(fake)
    # what had gone up already is removed: no half checkpoint left in the bucket
    assert "Contents" not in raw(endpoint).list_objects_v2(Bucket=bucket, Prefix="exp/1/")


def test_sharded_store_path(endpoint: str, bucket: str) -> None:
    sm = manager(endpoint, bucket)
    fake = FakeTransport()
    dists = group(2)
    ctxs = [CheckpointContext(d, sm, fake, "t", "t.1") for d in dists]

    def save(d: Any) -> str:
        with ctxs[d.rank].store_path({"steps_completed": 2}, shard=True) as (path, sid):
            (path / f"shard{d.rank}").write_text(str(d.rank))
        return sid

    sid, sid1 = all_ok(run_ranks(dists, save))
    assert sid == sid1
    assert set(sm.list_files(sid)) == {"metadata.json", "shard0", "shard1"}
    (body,) = reports(fake)
    assert set(body["resources"]) == {"metadata.json", "shard0", "shard1"}


def test_one_download_per_node(endpoint: str, bucket: str, tmp_path: Path) -> None:
    sm = manager(endpoint, bucket)
    src = tmp_path / "src"
    src.mkdir()
    (src / "w").write_text("w")
    sid = ctx_for(sm, FakeTransport()).upload(src, {"steps_completed": 1})
    gets: list[str] = []
    original = sm._get

    def counting(key: str, local: Path) -> None:
        gets.append(key)
        original(key, local)

    sm._get = counting  # type: ignore[method-assign]
    dists = group(4, local_size=2)
    ctxs = [CheckpointContext(d, sm, None, "t", None) for d in dists]

    def restore(d: Any) -> tuple[str, str]:
        with ctxs[d.rank].restore_path(sid) as path:
            return str(path), (path / "w").read_text()

    out = all_ok(run_ranks(dists, restore))
    assert [w for _, w in out] == ["w"] * 4
    assert out[0][0] == out[1][0] != out[2][0] == out[3][0]  # one directory per node
    assert len(gets) == 2 * 2  # two nodes x (w + metadata.json)
    assert not any(Path(p).exists() for p, _ in out)  # removed once every local rank is done


class FlakyProxy:
    """A plain-HTTP proxy in front of moto that answers the next ``n`` requests with a 500."""

    def __init__(self, target: str) -> None:
        import http.client
        import threading
        import urllib.parse
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.failures = 0
        self.seen = 0
        upstream = urllib.parse.urlsplit(target)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                proxy.seen += 1
                if proxy.failures > 0:
                    proxy.failures -= 1
                    err = b"<Error><Code>InternalError</Code><Message>injected</Message></Error>"
                    self.send_response(500)
                    self.send_header("Content-Length", str(len(err)))
                    self.end_headers()
                    self.wfile.write(err)
                    return
                conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = upstream.netloc
                conn.request(self.command, self.path, body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_500_is_retried_and_a_lasting_one_is_a_clear_error(
    endpoint: str, bucket: str, tmp_path: Path
) -> None:
    proxy = FlakyProxy(endpoint)
    try:
        sm = manager(proxy.url, bucket)
        fake = FakeTransport()
        ctx = ctx_for(sm, fake)
        src = tmp_path / "src"
        src.mkdir()
        (src / "w").write_text("w")
        proxy.failures = 2  # botocore's standard mode retries these
        sid = ctx.upload(src, {"steps_completed": 1})
        assert "w" in sm.list_files(sid) and len(reports(fake)) == 1
        proxy.failures = 1_000
        with pytest.raises(StorageError, match=rf"s3 bucket '{bucket}'.*(InternalError|500)"):
            ctx.upload(src, {"steps_completed": 2})
        assert len(reports(fake)) == 1
    finally:
        proxy.stop()
