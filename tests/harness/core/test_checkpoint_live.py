"""A trial checkpoints to S3 (moto on 127.0.0.1) and the live master files it: the whole path
from ``core.init()`` through storage to ``POST``/``PATCH /api/v1/checkpoints``."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.live import place_trial, run_launcher, task_env
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import StartMaster

pytestmark = pytest.mark.slow
boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

SAVE = b"""\
import json, pathlib, tempfile
import harness as det

with det.core.init() as ctx:
    with ctx.checkpoint.store_path({"steps_completed": 7, "note": "live"}) as (path, sid):
        (path / "model.bin").write_bytes(b"m" * 1000)
        (path / "sub").mkdir()
        (path / "sub" / "opt.bin").write_bytes(b"o" * 10)
    src = pathlib.Path(tempfile.mkdtemp())
    (src / "w").write_text("w")
    gone = ctx.checkpoint.upload(src, {"steps_completed": 8})
    ctx.checkpoint.delete(gone)
    with ctx.checkpoint.restore_path(sid) as restored:
        assert (restored / "model.bin").read_bytes() == b"m" * 1000
    meta = ctx.checkpoint.get_metadata(sid)
    print("IDS " + json.dumps({"kept": sid, "gone": gone, "meta": meta}))
"""


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


async def test_trial_checkpoints_to_s3_and_the_master_files_them(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path, s3_endpoint: str
) -> None:
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id="k",
        aws_secret_access_key="s",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket="live-ckpts")
    config = f"""
name: ckpt-live
entrypoint: python3 save.py
searcher: {{name: single, metric: loss, max_length: 10}}
resources: {{slots_per_trial: 1}}
max_restarts: 0
checkpoint_storage:
  type: s3
  bucket: live-ckpts
  prefix: exp
  endpoint_url: {s3_endpoint}
  access_key: k
  secret_key: s
"""
    m = await start_master()
    _, start, _ = await place_trial(m, agents, config, {"save.py": SAVE})
    env = task_env(m, start, tmp_path / "work", AWS_DEFAULT_REGION="us-east-1")
    ran = await run_launcher(list(start.spec.argv), env)
    assert ran.returncode == 0, ran.stderr.decode(errors="replace")[-3000:]
    line = next(x for x in ran.stdout.decode().splitlines() if x.startswith("IDS "))
    ids = json.loads(line[4:])
    assert ids["meta"]["steps_completed"] == 7 and ids["meta"]["note"] == "live"

    kept = (await m.get(f"/api/v1/checkpoints/{ids['kept']}"))["checkpoint"]
    assert kept["state"] == "STATE_COMPLETED"
    assert kept["resources"]["model.bin"] == "1000" and kept["resources"]["sub/opt.bin"] == "10"
    assert kept["metadata"]["steps_completed"] == 7
    listed = client.list_objects_v2(Bucket="live-ckpts", Prefix=f"exp/{ids['kept']}/")
    assert {o["Key"].rsplit("/", 1)[-1] for o in listed["Contents"]} == {
        "model.bin",
        "opt.bin",
        "metadata.json",
    }
    gone = (await m.get(f"/api/v1/checkpoints/{ids['gone']}"))["checkpoint"]
    assert gone["state"] == "STATE_DELETED" and gone["resources"] == {}
    assert "Contents" not in client.list_objects_v2(
        Bucket="live-ckpts", Prefix=f"exp/{ids['gone']}/"
    )
