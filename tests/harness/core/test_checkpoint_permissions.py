"""A checkpoint on shared_fs is its writer's alone: 0700 folders, 0600 files, however the harness
wrote it (in place, copied in, sharded); another user's task cannot read it, its owner can
download it, and the master (root) still deletes it.

The tests that switch users need root: they run the real harness as two task users (uids no
account uses, as the master's default task users are) in subprocesses.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.services.checkpoint_files import delete_checkpoint_files, not_ours_hint
from harness.core import DummyDistributedContext
from harness.core._checkpoint import CheckpointContext
from harness.core._storage import DirectoryStorageManager, make_shared_dirs, private_mode
from tests.harness.core.threaded_dist import all_ok, group, run_ranks
from tests.harness.fakes import FakeTransport

REPO = Path(__file__).resolve().parents[3]
ALICE, BOB, MASTER = 61011, 61012, 61013  # task users and a master that is not root
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """Tasks write under the usual 022: what the harness stores must not depend on it."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def modes(root: Path) -> dict[str, int]:
    """Every entry under ``root`` (itself as ".") with its permission bits."""
    out = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in sorted(root.rglob("*")):
        out[path.relative_to(root).as_posix()] = stat.S_IMODE(path.lstat().st_mode)
    return out


def ctx(base: Path, dist: object | None = None) -> CheckpointContext:
    storage = DirectoryStorageManager(base)
    return CheckpointContext(
        dist or DummyDistributedContext(), storage, FakeTransport(), "t", "t.1", trial_id=1
    )


def test_store_path_in_place_is_private(tmp_path: Path) -> None:
    base = tmp_path / "checkpoints"
    with ctx(base).store_path({"steps_completed": 1}) as (path, sid):
        (path / "sub" / "deeper").mkdir(parents=True)
        (path / "sub" / "deeper" / "weights.bin").write_bytes(b"w")
        (path / "model.txt").write_text("m")
        (path / "run.sh").write_text("#!/bin/sh\n")
        (path / "run.sh").chmod(0o755)
        # While the task writes, the folder is already closed to others.
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert modes(base / sid) == {
        ".": 0o700,
        "metadata.json": 0o600,
        "model.txt": 0o600,
        "run.sh": 0o700,  # its owner may still execute it
        "sub": 0o700,
        "sub/deeper": 0o700,
        "sub/deeper/weights.bin": 0o600,
    }
    assert stat.S_IMODE(base.stat().st_mode) == 0o1777  # the shared folder above stays open


def test_an_upload_copies_in_privately(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "opt.bin").write_bytes(b"xy")
    (src / "model.bin").write_bytes(b"12345")
    base = tmp_path / "checkpoints"
    sid = ctx(base).upload(src, {"steps_completed": 2})
    assert set(modes(base / sid).items()) == {
        (".", 0o700),
        ("metadata.json", 0o600),
        ("model.bin", 0o600),
        ("sub", 0o700),
        ("sub/opt.bin", 0o600),
    }


def test_a_sharded_store_path_is_private_once_every_rank_wrote(tmp_path: Path) -> None:
    base = tmp_path / "checkpoints"
    dists = group(3)
    ctxs = [ctx(base, d) for d in dists]

    def save(d: object) -> str:
        rank = d.rank  # type: ignore[attr-defined]
        meta = {"steps_completed": 3} if rank == 0 else {}
        with ctxs[rank].store_path(meta, shard=True) as (path, sid):
            (path / f"rank{rank}").mkdir()
            (path / f"rank{rank}" / "part").write_text(str(rank))
        return sid

    (sid,) = set(all_ok(run_ranks(dists, save)))
    found = modes(base / sid)
    assert set(found.values()) == {0o700, 0o600}, found
    assert all(found[k] == 0o600 for k in found if k.endswith(("part", ".json"))), found


def test_private_modes_keep_only_the_owners_bits() -> None:
    assert private_mode(0o644, is_dir=False) == 0o600
    assert private_mode(0o777, is_dir=False) == 0o700
    assert private_mode(0o400, is_dir=False) == 0o600
    assert private_mode(0o755, is_dir=True) == 0o700


def test_the_hint_names_the_owner_for_a_master_that_is_not_root(tmp_path: Path) -> None:
    mine = os.geteuid()
    assert not_ours_hint(tmp_path, euid=0) == ""
    assert not_ours_hint(tmp_path, euid=mine) == ""
    hint = not_ours_hint(tmp_path, euid=mine + 1)
    assert f"uid {mine}" in hint and "run the master as root" in hint


# --- as other users (root only) -----------------------------------------------------------------

WRITE = """
    import sys
    from pathlib import Path
    from harness.core import DummyDistributedContext
    from harness.core._checkpoint import DummyCheckpointContext
    from harness.core._storage import DirectoryStorageManager

    storage = DirectoryStorageManager(Path(sys.argv[1]))
    ckpt = DummyCheckpointContext(DummyDistributedContext(), storage)
    with ckpt.store_path({"steps_completed": 5}) as (path, sid):
        (path / "sub").mkdir()
        (path / "sub" / "weights.bin").write_bytes(b"secret weights")
        (path / "model.txt").write_text("secret")
    print(sid)
"""

PEEK = """
    import os, sys
    from pathlib import Path
    ckpt = Path(sys.argv[1])
    for what, look in (
        ("list", lambda: os.listdir(ckpt)),
        ("read", lambda: (ckpt / "model.txt").read_text()),
        ("read-deep", lambda: (ckpt / "sub" / "weights.bin").read_bytes()),
        ("stat", lambda: (ckpt / "model.txt").stat()),
    ):
        try:
            look()
            print(what, "allowed")
        except PermissionError:
            print(what, "denied")
"""

DOWNLOAD = """
    import sys
    from pathlib import Path
    from harness.core._storage import DirectoryStorageManager
    DirectoryStorageManager(Path(sys.argv[1])).download(sys.argv[2], Path(sys.argv[3]))
    print((Path(sys.argv[3]) / "sub" / "weights.bin").read_bytes().decode())
"""

GC = """
    import sys
    from controlplane.services.checkpoint_files import (
        CheckpointDeleteError, delete_checkpoint_files,
    )
    storage = {"type": "shared_fs", "host_path": sys.argv[1], "storage_path": "checkpoints"}
    try:
        delete_checkpoint_files(storage, sys.argv[2])
        print("deleted")
    except CheckpointDeleteError as exc:
        print(exc)
"""


def as_user(uid: int, script: str, *args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        user=uid,
        group=uid,
        extra_groups=[],
        umask=0o022,
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO), "HOME": str(cwd)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A shared_fs host_path as `det deploy local` prepares one: 1777, reachable by all."""
    host = tmp_path / "shared"
    make_shared_dirs(host)
    for user in (ALICE, BOB, MASTER):
        (tmp_path / f"home{user}").mkdir()
        os.chown(tmp_path / f"home{user}", user, user)
    return host


@needs_root
def test_another_users_task_cannot_read_a_checkpoint_but_its_owner_can(
    shared: Path, tmp_path: Path
) -> None:
    base = shared / "checkpoints"
    sid = as_user(ALICE, WRITE, str(base), cwd=tmp_path / f"home{ALICE}")
    ckpt = base / sid
    info = ckpt.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (ALICE, 0o700)
    assert {p.stat().st_uid for p in ckpt.rglob("*")} == {ALICE}

    peeked = as_user(BOB, PEEK, str(ckpt), cwd=tmp_path / f"home{BOB}")
    assert peeked.splitlines() == ["list denied", "read denied", "read-deep denied", "stat denied"]

    # The owner downloads it (the SDK's Checkpoint.download() reads the storage directly).
    dst = tmp_path / f"home{ALICE}" / "downloaded"
    got = as_user(ALICE, DOWNLOAD, str(base), sid, str(dst), cwd=tmp_path / f"home{ALICE}")
    assert got == "secret weights"


@needs_root
def test_the_master_still_deletes_another_users_private_checkpoint(
    shared: Path, tmp_path: Path
) -> None:
    base = shared / "checkpoints"
    sid = as_user(ALICE, WRITE, str(base), cwd=tmp_path / f"home{ALICE}")

    # A master that is not root may not; it says why, and the checkpoint stays as it was.
    refused = as_user(MASTER, GC, str(shared), sid, cwd=tmp_path / f"home{MASTER}")
    assert f"belongs to uid {ALICE}" in refused and "run the master as root" in refused
    assert (base / sid / "sub" / "weights.bin").exists()

    # The master as root (as `det deploy local` run as root starts it) deletes it all.
    storage = {"type": "shared_fs", "host_path": str(shared), "storage_path": "checkpoints"}
    delete_checkpoint_files(storage, sid)
    assert not (base / sid).exists()
    assert base.exists()  # the shared folder above stays for the others' checkpoints
