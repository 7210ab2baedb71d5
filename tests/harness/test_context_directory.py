"""Unpacking the context directory: what a safe archive becomes, and every unsafe member refused."""

from __future__ import annotations

import base64
import io
import os
import tarfile
from pathlib import Path

import pytest

from harness.exec.context_directory import UnsafeArchive, download, unpack
from tests.harness.fakes import FakeTransport


def _tgz(*members: tuple[str, str, bytes | str]) -> bytes:
    """Members as (kind, name, content or link target); kind: file, exec, dir, sym, hard, fifo."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for kind, name, payload in members:
            info = tarfile.TarInfo(name)
            if kind in ("file", "exec"):
                data = payload if isinstance(payload, bytes) else payload.encode()
                info.size = len(data)
                info.mode = 0o755 if kind == "exec" else 0o644
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {
                "dir": tarfile.DIRTYPE,
                "sym": tarfile.SYMTYPE,
                "hard": tarfile.LNKTYPE,
                "fifo": tarfile.FIFOTYPE,
            }[kind]
            if kind in ("sym", "hard"):
                info.linkname = str(payload)
            tar.addfile(info)
    return buf.getvalue()


def test_files_dirs_modes_and_inner_links(tmp_path: Path) -> None:
    archive = _tgz(
        ("dir", "pkg", ""),
        ("file", "pkg/model.py", "x = 1\n"),
        ("exec", "run.sh", "#!/bin/sh\n"),
        ("file", "data/deep/a.txt", "a"),
        ("sym", "link.py", "pkg/model.py"),
        ("sym", "pkg/up.txt", "../data/deep/a.txt"),
    )
    dest = tmp_path / "work"
    assert unpack(archive, dest) == 6
    assert (dest / "pkg" / "model.py").read_text() == "x = 1\n"
    assert os.access(dest / "run.sh", os.X_OK)
    assert not os.access(dest / "pkg" / "model.py", os.X_OK)
    assert (dest / "link.py").read_text() == "x = 1\n"
    assert (dest / "pkg" / "up.txt").read_text() == "a"


def test_existing_files_are_replaced(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("old")
    unpack(_tgz(("file", "train.py", "new")), tmp_path)
    assert (tmp_path / "train.py").read_text() == "new"


@pytest.mark.parametrize(
    "members",
    [
        [("file", "../evil.txt", "x")],
        [("file", "/abs/evil.txt", "x")],
        [("file", "a/../../evil.txt", "x")],
        [("sym", "out", "../outside")],
        [("sym", "out", "/etc/passwd")],
        [("sym", "d", "."), ("sym", "d/x", "../../outside")],
        [("hard", "h", "/etc/passwd")],
        [("fifo", "pipe", "")],
    ],
    ids=["dotdot", "absolute", "nested-dotdot", "sym-out", "sym-abs", "sym-chain", "hard", "fifo"],
)
def test_unsafe_members_are_refused(tmp_path: Path, members: list[tuple[str, str, str]]) -> None:
    dest = tmp_path / "work"
    with pytest.raises(UnsafeArchive):
        unpack(_tgz(*members), dest)
    assert not (tmp_path / "evil.txt").exists()
    assert not (tmp_path / "outside").exists()


def test_a_parent_link_to_outside_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "work"
    dest.mkdir()
    (dest / "escape").symlink_to(outside)  # left over in the workdir, not from the archive
    with pytest.raises(UnsafeArchive):
        unpack(_tgz(("file", "escape/evil.txt", "x")), dest)
    assert list(outside.iterdir()) == []


def test_download_fetches_with_the_task_id(tmp_path: Path) -> None:
    archive = _tgz(("file", "train.py", "print(1)\n"))
    fake = FakeTransport(lambda *_: {"b64Tgz": base64.b64encode(archive).decode()})
    assert download(fake, "trial-1", tmp_path) == 1
    assert fake.calls[0].method == "GET"
    assert fake.calls[0].path == "/api/v1/tasks/trial-1/context_directory"
    assert (tmp_path / "train.py").read_text() == "print(1)\n"


def test_download_of_no_context(tmp_path: Path) -> None:
    assert download(FakeTransport(lambda *_: {"b64Tgz": ""}), "cmd-1", tmp_path) == 0
    assert list(tmp_path.iterdir()) == []
