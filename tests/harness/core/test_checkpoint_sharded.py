"""Sharded checkpoints: several ranks (threads sharing an in-memory DistributedContext) save one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.core._checkpoint import CheckpointConflict, CheckpointContext
from harness.core._storage import DirectoryStorageManager, StorageManager
from tests.harness.core.threaded_dist import ThreadDist, all_ok, group, run_ranks
from tests.harness.fakes import FakeTransport


def contexts(
    dists: list[ThreadDist], storage: StorageManager, fake: FakeTransport
) -> list[CheckpointContext]:
    return [CheckpointContext(d, storage, fake, "t", "t.1", trial_id=1) for d in dists]


def reports(fake: FakeTransport) -> list[dict[str, Any]]:
    return [c.body for c in fake.calls if c.method == "POST" and c.path == "/api/v1/checkpoints"]


def rank_dirs(tmp_path: Path, files: list[dict[str, bytes]]) -> list[Path]:
    out = []
    for rank, contents in enumerate(files):
        d = tmp_path / f"rank{rank}"
        d.mkdir()
        for name, data in contents.items():
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_bytes(data)
        out.append(d)
    return out


def test_upload_merges_every_rank(tmp_path: Path) -> None:
    fake = FakeTransport()
    store = DirectoryStorageManager(tmp_path / "store")
    dirs = rank_dirs(
        tmp_path,
        [
            {"model/shard0": b"0", "common.json": b"same"},
            {"model/shard1": b"11", "common.json": b"same"},
            {},
        ],
    )
    ctxs = contexts(group(3), store, fake)
    metas = [{"steps_completed": 4, "ranks": {"r0": 0}}, {"ranks": {"r1": 1}}, {}]

    def save(d: ThreadDist) -> str:
        src = dirs[d.rank] if d.rank < 2 else None
        return ctxs[d.rank].upload(src, metas[d.rank], shard=True)

    ids = all_ok(run_ranks([c._dist for c in ctxs], save))  # type: ignore[misc]
    assert len(set(ids)) == 1
    sid = ids[0]
    stored = tmp_path / "store" / sid
    assert (stored / "model" / "shard1").read_bytes() == b"11"
    meta = {"steps_completed": 4, "ranks": {"r0": 0, "r1": 1}}
    assert json.loads((stored / "metadata.json").read_text()) == meta
    (body,) = reports(fake)  # the chief alone reports, once
    assert body["uuid"] == sid and body["metadata"] == meta
    assert set(body["resources"]) == {
        "common.json",
        "metadata.json",
        "model/",
        "model/shard0",
        "model/shard1",
    }


def test_conflicting_files_fail_every_rank_and_store_nothing(tmp_path: Path) -> None:
    fake = FakeTransport()
    store = DirectoryStorageManager(tmp_path / "store")
    dirs = rank_dirs(tmp_path, [{"w.pt": b"zero"}, {"w.pt": b"one!"}])
    ctxs = contexts(group(2), store, fake)
    out = run_ranks(
        [c._dist for c in ctxs],  # type: ignore[misc]
        lambda d: ctxs[d.rank].upload(dirs[d.rank], {"steps_completed": 1}, shard=True),
    )
    for r in out:
        assert isinstance(r, CheckpointConflict)
        assert "w.pt given by ranks [0, 1]" in str(r)
    assert not reports(fake)
    assert not (tmp_path / "store").exists() or not list((tmp_path / "store").iterdir())


def test_conflicting_metadata_fails_every_rank(tmp_path: Path) -> None:
    fake = FakeTransport()
    dirs = rank_dirs(tmp_path, [{"a": b"a"}, {"b": b"b"}])
    ctxs = contexts(group(2), DirectoryStorageManager(tmp_path / "store"), fake)
    out = run_ranks(
        [c._dist for c in ctxs],  # type: ignore[misc]
        lambda d: ctxs[d.rank].upload(dirs[d.rank], {"steps_completed": 1 + d.rank}, shard=True),
    )
    assert all(isinstance(r, CheckpointConflict) and "/steps_completed" in str(r) for r in out)
    assert not reports(fake)


def test_one_rank_losing_a_file_fails_all_and_reports_nothing(tmp_path: Path) -> None:
    fake = FakeTransport()
    dirs = rank_dirs(tmp_path, [{"a": b"a"}, {"b": b"b"}])
    ctxs = contexts(group(2), DirectoryStorageManager(tmp_path / "store"), fake)

    def save(d: ThreadDist) -> str:
        def selector(name: str) -> bool:
            if d.rank == 1:
                (dirs[1] / "b").unlink()  # listed, then gone before the upload
            return True

        return ctxs[d.rank].upload(
            dirs[d.rank], {"steps_completed": 1}, shard=True, selector=selector
        )

    out = run_ranks([c._dist for c in ctxs], save)  # type: ignore[misc]
    assert all(isinstance(r, RuntimeError) for r in out), out
    assert "rank 1" in str(out[0]) and "vanished" in str(out[0])
    assert not reports(fake)
    assert not list((tmp_path / "store").iterdir())


def test_store_path_in_place_on_shared_fs(tmp_path: Path) -> None:
    fake = FakeTransport()
    ctxs = contexts(group(3), DirectoryStorageManager(tmp_path / "store"), fake)

    def save(d: ThreadDist) -> tuple[str, Path]:
        meta = {"steps_completed": 9} if d.rank == 0 else {f"rank{d.rank}": True}
        with ctxs[d.rank].store_path(meta, shard=True) as (path, sid):
            (path / f"part{d.rank}").write_text(str(d.rank))
        return sid, path

    out = all_ok(run_ranks([c._dist for c in ctxs], save))  # type: ignore[misc]
    assert len({sid for sid, _ in out}) == 1 and len({p for _, p in out}) == 1
    (body,) = reports(fake)
    assert {"part0", "part1", "part2", "metadata.json"} <= set(body["resources"])
    assert body["metadata"] == {"steps_completed": 9, "rank1": True, "rank2": True}


def test_store_path_failing_on_one_rank_fails_all(tmp_path: Path) -> None:
    fake = FakeTransport()
    ctxs = contexts(group(2), DirectoryStorageManager(tmp_path / "store"), fake)

    def save(d: ThreadDist) -> None:
        with ctxs[d.rank].store_path({"steps_completed": 1}, shard=True) as (path, _):
            if d.rank == 1:
                raise OSError("disk full")
            (path / "ok").write_text("ok")

    out = run_ranks([c._dist for c in ctxs], save)  # type: ignore[misc]
    assert isinstance(out[1], OSError)
    assert isinstance(out[0], RuntimeError) and "disk full" in str(out[0])
    assert not reports(fake)
    assert not list((tmp_path / "store").iterdir())


def test_shared_download_takes_the_union_of_local_selectors(tmp_path: Path) -> None:
    store = DirectoryStorageManager(tmp_path / "store")
    src = rank_dirs(tmp_path, [{"a": b"a", "b": b"b", "c": b"c"}])[0]
    sid = CheckpointContext(group(1)[0], store, None, "t", None).upload(src, {"steps_completed": 1})
    dists = group(4, local_size=2)
    ctxs = contexts(dists, store, FakeTransport())
    picks = ["a", "b", None, "c"]

    def fetch(d: ThreadDist) -> list[str]:
        want = picks[d.rank]
        dst = tmp_path / f"node{d.cross_rank}"
        sel = None if want is None else (lambda n, w=want: n == w)
        ctxs[d.rank].download(sid, dst, selector=sel)
        return sorted(p.name for p in dst.iterdir())

    out = all_ok(run_ranks(dists, fetch))
    assert out[0] == out[1] == ["a", "b"]  # node 0: rank 0 wants a, rank 1 wants b
    assert out[2] == out[3] == ["a", "b", "c", "metadata.json"]  # node 1: rank 2 wants all

    def restore(d: ThreadDist) -> str:
        with ctxs[d.rank].restore_path(sid) as path:
            return (path / "c").read_text()

    assert all_ok(run_ranks(dists, restore)) == ["c"] * 4


def test_two_gloo_processes(tmp_path: Path) -> None:
    """The same protocol over real torch.distributed collectives between two processes."""
    pytest.importorskip("torch")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    worker = Path(__file__).with_name("ckpt_gloo_worker.py")
    repo = Path(__file__).resolve().parents[3]
    procs = []
    for rank in range(2):
        env = {
            **os.environ,
            "PYTHONPATH": str(repo),
            "RANK": str(rank),
            "WORLD_SIZE": "2",
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": "2",
            "STORE_PORT": str(port),
        }
        cmd = [sys.executable, str(worker), str(tmp_path / "store"), str(tmp_path / "src")]
        procs.append(
            subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-3000:]
            line = next(x for x in out.splitlines() if x.startswith("RESULT "))
            results.append(json.loads(line[len("RESULT ") :]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    r0, r1 = results
    assert r0["upload"] == r1["upload"] and r0["store_path"] == r1["store_path"]
    up = tmp_path / "store" / r0["upload"]
    assert sorted(p.name for p in up.iterdir()) == ["metadata.json", "shard0.bin", "shard1.bin"]
    meta = json.loads((up / "metadata.json").read_text())
    assert meta == {"steps_completed": 3, "r0": 1, "r1": 1}
    sp = tmp_path / "store" / r0["store_path"]
    assert sorted(p.name for p in sp.iterdir()) == ["metadata.json", "part0", "part1"]
    assert "clash.bin given by ranks [0, 1]" in r0["conflict"] and r1["conflict"]
    assert r0["restored"] == r1["restored"] == ["metadata.json", "shard0.bin", "shard1.bin"]
