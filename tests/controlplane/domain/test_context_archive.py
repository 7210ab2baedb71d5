"""Tests for controlplane.domain.context_archive: wire parsing, packing and safe extraction."""

from __future__ import annotations

import base64
import gzip
import io
import os
import random
import stat
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controlplane.domain import context_archive as ca
from controlplane.domain.context_archive import (
    MAX_CONTEXT_BYTES,
    ContextArchiveError,
    ContextFile,
    files_total_size,
    pack_context,
    parse_wire_files,
    unpack_context,
)

MiB = 1 << 20


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def wire_file(path: str, data: bytes = b"x", **extra: object) -> dict[str, object]:
    item: dict[str, object] = {
        "path": path,
        "type": 48,
        "content": b64(data),
        "mtime": "1700000000",
    }
    item.update({"mode": 33188, "uid": 0, "gid": 0})
    item.update(extra)
    return item


def wire_dir(path: str, **extra: object) -> dict[str, object]:
    item: dict[str, object] = {"path": path, "type": 53, "content": "", "mtime": "1700000000"}
    item.update({"mode": 16877, "uid": 0, "gid": 0})
    item.update(extra)
    return item


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Everything under root (lstat, no following): path -> content, None for dirs/links."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = Path(dirpath, name)
            rel = full.relative_to(root).as_posix()
            out[rel] = full.read_bytes() if full.is_file() and not full.is_symlink() else None
    return out


# --------------------------------------------------------------------------- parse_wire_files


def test_parse_v1file_and_legacy_forms() -> None:
    files = parse_wire_files(
        [
            wire_dir("sub"),
            wire_file("train.py", b"print(1)\n", mode=33261),
            {"path": "sub/d.txt", "type": 48, "content": b64(b"d"), "mtime": 1700000001,
             "mode": 33188, "uid": 0, "gid": 0},  # legacy dict form: int mtime
            {"path": "legacy", "type": "5", "content": None, "mtime": 5, "mode": 0o755},
            {"path": "legacy/f", "type": "0", "content": b64(b"z"), "mtime": "6"},
            {"path": "words/f", "type": "file", "content": ""},
            {"path": "words", "type": "directory"},
            {"path": "typeless_dir", "mode": 16877},
            {"path": "./typeless//file/", "content": b64(b"t")},
        ]
    )  # fmt: skip
    by_path = {f.path: f for f in files}
    assert by_path["sub"] == ContextFile("sub", 53, b"", 1700000000, 16877)
    assert by_path["train.py"].content == b"print(1)\n"
    assert by_path["train.py"].mode == 33261
    assert by_path["sub/d.txt"].mtime == 1700000001
    assert by_path["legacy"].type == 53 and by_path["legacy"].mtime == 5
    assert by_path["legacy/f"].type == 48 and by_path["legacy/f"].mtime == 6
    assert by_path["words/f"].type == 48 and by_path["words"].type == 53
    assert by_path["typeless_dir"].is_dir
    assert by_path["typeless/file"].content == b"t" and not by_path["typeless/file"].is_dir
    assert files_total_size(files) == len(b"print(1)\n") + 1 + 1 + 1
    assert parse_wire_files([]) == []


def test_parse_normalises_paths() -> None:
    [f] = parse_wire_files([wire_file("./a//b/./c")])
    assert f.path == "a/b/c"


PARSE_REFUSALS = [
    # (id, items, message fragment)
    ("absolute", [wire_file("/etc/passwd")], "'/etc/passwd': path is absolute"),
    ("dotdot", [wire_file("a/../../etc/passwd")],
     "context file 'a/../../etc/passwd': path escapes the context directory"),
    ("dotdot-lead", [wire_file("../x")], "path escapes the context directory"),
    ("dotdot-trail", [wire_dir("a/..")], "path escapes the context directory"),
    ("drive", [wire_file("C:/Windows/x")], "Windows drive letter"),
    ("drive-relative", [wire_file("c:x")], "Windows drive letter"),
    ("backslash", [wire_file("a\\..\\..\\x")], "backslash"),
    ("unc", [wire_file("\\\\server\\share\\x")], "backslash"),
    ("empty", [wire_file("")], "path is empty"),
    ("dot", [wire_dir(".")], "path is empty"),
    ("dot-slash", [wire_dir("./")], "path is empty"),
    ("nul", [wire_file("a\x00b")], "NUL byte"),
    ("control", [wire_file("a\nb")], "control character"),
    ("surrogate", [wire_file("a\udcffb")], "not valid UTF-8"),
    ("too-long", [wire_file("d/" * 2048 + "f")], "longer than 4096 bytes"),
    ("long-name", [wire_file("x" * 256)], "component exceeds 255 bytes"),
    ("duplicate", [wire_file("a/b"), wire_file("a/./b")], "'a/b': duplicate path"),
    ("duplicate-dir", [wire_dir("a"), wire_dir("a/")], "'a': duplicate path"),
    ("duplicate-kind", [wire_dir("a"), wire_file("a")], "duplicate path"),
    ("parent-is-file", [wire_file("a"), wire_file("a/b")], "'a/b': parent 'a' is a file"),
    ("parent-is-file-late", [wire_file("a/b/c"), wire_dir("a"), wire_file("a/b")],
     "parent 'a/b' is a file"),
    ("hardlink", [wire_file("l", type=49)], "hard link entries are not allowed"),
    ("symlink", [wire_file("l", type=50)], "symbolic link entries are not allowed"),
    ("symlink-str", [wire_file("l", type="2")], "symbolic link entries are not allowed"),
    ("hardlink-str", [wire_file("l", type="1")], "hard link entries are not allowed"),
    ("chardev", [wire_file("l", type=51)], "character device entries are not allowed"),
    ("blockdev", [wire_file("l", type="4")], "block device entries are not allowed"),
    ("fifo", [wire_file("l", type=54)], "fifo entries are not allowed"),
    ("contiguous", [wire_file("l", type=55)], "unsupported entry type 55"),
    ("type-word", [wire_file("l", type="symlink")], "unsupported entry type 'symlink'"),
    ("type-bool", [wire_file("l", type=True)], "unsupported entry type True"),
    ("type-float", [wire_file("l", type=48.0)], "unsupported entry type 48.0"),
    ("mode-symlink", [wire_file("l", mode=0o120777)], "says a symbolic link"),
    ("mode-chardev", [wire_file("l", mode=0o020644)], "says a character device"),
    ("mode-blockdev", [wire_file("l", mode=0o060644)], "says a block device"),
    ("mode-fifo", [wire_file("l", mode=0o010644)], "says a fifo"),
    ("mode-socket", [wire_file("l", mode=0o140755)], "says a socket"),
    ("mode-dir-for-file", [wire_file("l", mode=16877)], "says a directory"),
    ("mode-file-for-dir", [wire_dir("l", mode=33188)], "says a regular file"),
    ("mode-negative", [wire_file("l", mode=-1)], "mode must not be negative"),
    ("mode-text", [wire_file("l", mode="rw-r--r--")], "mode must be an integer"),
    ("mode-huge", [wire_file("l", mode=1 << 40)], "mode is out of range"),
    ("mtime-negative", [wire_file("l", mtime=-5)], "mtime must not be negative"),
    ("mtime-negative-str", [wire_file("l", mtime="-5")], "mtime must not be negative"),
    ("mtime-text", [wire_file("l", mtime="yesterday")], "mtime must be an integer"),
    ("mtime-float", [wire_file("l", mtime=1.5)], "mtime must be an integer"),
    ("mtime-bool", [wire_file("l", mtime=True)], "mtime must be an integer"),
    ("mtime-overflow", [wire_file("l", mtime=str(1 << 63))], "mtime is out of range"),
    ("content-int", [wire_file("l", content=123)], "content must be a base64 string, got int"),
    ("content-list", [wire_file("l", content=["a"])], "content must be a base64 string"),
    ("content-bad-b64", [wire_file("l", content="!!!!")], "content is not valid base64"),
    ("content-bad-padding", [wire_file("l", content="abc")], "content is not valid base64"),
    ("content-newline", [wire_file("l", content="YWJj\nZGVm")], "content is not valid base64"),
    ("dir-with-content", [wire_dir("d", content=b64(b"x"))], "directory entry must have empty"),
    ("not-a-dict", [["path", "a"]], "context file #0: entry must be an object, got list"),
    ("no-path", [wire_file("a"), {"type": 48}], "context file #1: entry has no 'path'"),
    ("path-int", [{"path": 7}], "context file #0: path must be a string, got int"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("items", "fragment"), [pytest.param(i, f, id=n) for n, i, f in PARSE_REFUSALS]
)
def test_parse_refusals(items: list[dict[str, object]], fragment: str) -> None:
    with pytest.raises(ContextArchiveError) as exc_info:
        parse_wire_files(items)
    assert fragment in str(exc_info.value)
    assert isinstance(exc_info.value, ValueError)


@pytest.mark.parametrize("items", [{"path": "a"}, "a", 5])
def test_parse_refuses_non_list(items: object) -> None:
    with pytest.raises(ContextArchiveError, match="files must be a list"):
        parse_wire_files(items)  # type: ignore[arg-type]


def test_parse_error_carries_path_and_rule() -> None:
    with pytest.raises(ContextArchiveError) as exc_info:
        parse_wire_files([wire_file("a/../../etc/passwd")])
    assert exc_info.value.path == "a/../../etc/passwd"
    assert exc_info.value.rule == "path escapes the context directory"


def test_parse_too_many_entries() -> None:
    items = [{"path": f"f{i}"} for i in range(ca.MAX_ENTRIES + 1)]
    with pytest.raises(ContextArchiveError, match=r"too many entries \(100001 > 100000\)"):
        parse_wire_files(items)


def test_parse_size_limit_small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ca, "MAX_CONTEXT_BYTES", 10)
    assert len(parse_wire_files([wire_file("a", b"12345"), wire_file("b", b"67890")])) == 2
    with pytest.raises(ContextArchiveError) as exc_info:
        parse_wire_files([wire_file("a", b"12345"), wire_file("b", b"678901")])
    assert "'b': total decoded content exceeds the maximum allowed size of 10 bytes" in str(
        exc_info.value
    )
    with pytest.raises(ContextArchiveError, match="maximum allowed size of 4 bytes"):
        parse_wire_files([wire_file("a", b"12345")], max_total_bytes=4)


def test_parse_size_checked_before_decoding() -> None:
    # invalid base64, but far too big: the size rule fires first, without decoding it
    with pytest.raises(ContextArchiveError, match="maximum allowed size"):
        parse_wire_files([wire_file("a", content="!!!!" * 1000)], max_total_bytes=100)


def test_parse_96_mib_is_refused() -> None:
    one_mib = b64(bytes(MiB))  # the same str object referenced 96 times
    items = [{"path": f"f{i:03d}", "type": 48, "content": one_mib, "mtime": 0} for i in range(96)]
    with pytest.raises(ContextArchiveError) as exc_info:
        parse_wire_files(items)
    message = str(exc_info.value)
    assert "exceeds the maximum allowed size of 99614720 bytes" in message
    assert "'f095'" in message  # fails at the entry that crosses 95 MiB
    assert len(parse_wire_files(items[:95])) == 95  # exactly 95 MiB is allowed
    assert MAX_CONTEXT_BYTES == 99_614_720 == 95 * MiB


# --------------------------------------------------------------------------- ContextFile / pack


def test_context_file_validates_directly() -> None:
    assert ContextFile("./a/b/", "0").path == "a/b"
    assert ContextFile("d", "5").type == 53
    with pytest.raises(ContextArchiveError, match="path escapes"):
        ContextFile("../x", 48)
    with pytest.raises(ContextArchiveError, match="symbolic link"):
        ContextFile("x", 50)
    with pytest.raises(ContextArchiveError, match="content must be bytes"):
        ContextFile("x", 48, "text")  # type: ignore[arg-type]


def test_pack_refuses_bad_sets() -> None:
    with pytest.raises(ContextArchiveError, match="duplicate path"):
        pack_context([ContextFile("a", 48), ContextFile("./a", 48)])
    with pytest.raises(ContextArchiveError, match="parent 'a' is a file"):
        pack_context([ContextFile("a", 48), ContextFile("a/b", 48)])


def test_pack_is_deterministic_and_normalised() -> None:
    files = [
        ContextFile("z.txt", 48, b"z", 1700000000, 0o100600),
        ContextFile("bin", 53, b"", 1700000001, 0o40700),
        ContextFile("bin/run.sh", 48, b"#!/bin/sh\n", 1700000002, 0o104775),  # setuid dropped
        ContextFile("a.txt", 48, b"a", 5, 0o100666),
    ]
    tgz = pack_context(files)
    shuffled = files[:]
    random.Random(1).shuffle(shuffled)
    assert pack_context(shuffled) == tgz == pack_context(list(reversed(files)))
    assert tgz[4:8] == b"\0\0\0\0"  # gzip header mtime is zero
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["a.txt", "bin", "bin/run.sh", "z.txt"]
    assert {(m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, "", "")}
    modes = {m.name: m.mode for m in members}
    assert modes == {"a.txt": 0o644, "bin": 0o755, "bin/run.sh": 0o755, "z.txt": 0o644}
    assert {m.name: m.mtime for m in members}["bin/run.sh"] == 1700000002


# --------------------------------------------------------------------------- unpack round trip


def test_round_trip_preserves_paths_content_exec_bit(tmp_path: Path) -> None:
    long_dir = "deep/" + "/".join(["segment"] * 20)  # > 100 chars: needs a pax header
    files = parse_wire_files(
        [
            wire_dir("sub"),
            wire_file("train.py", b"print('hi')\n", mode=0o100755, mtime="1700000000"),
            wire_file("sub/data.bin", bytes(range(256)) * 10, mtime=1600000000),
            wire_file("sub/empty", b""),
            wire_dir("emptydir"),
            wire_file("ünïcödé/名前.txt", "héllo".encode()),
            wire_file(f"{long_dir}/f.txt", b"long"),
        ]
    )
    dest = tmp_path / "out"
    written = unpack_context(pack_context(files), dest)
    assert written == sorted(f.path for f in files)
    assert (dest / "train.py").read_bytes() == b"print('hi')\n"
    assert (dest / "sub/data.bin").read_bytes() == bytes(range(256)) * 10
    assert (dest / "sub/empty").read_bytes() == b""
    assert (dest / "emptydir").is_dir()
    assert (dest / "ünïcödé/名前.txt").read_text() == "héllo"
    assert (dest / long_dir / "f.txt").read_bytes() == b"long"
    assert stat.S_IMODE((dest / "train.py").stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "sub/data.bin").stat().st_mode) == 0o644
    assert (dest / "train.py").stat().st_mtime == 1700000000
    assert (dest / "sub/data.bin").stat().st_mtime == 1600000000
    assert (dest / "sub").stat().st_mtime == 1700000000


def test_unpack_empty_inputs(tmp_path: Path) -> None:
    assert unpack_context(b"", tmp_path / "none") == []
    assert unpack_context(pack_context([]), tmp_path / "empty") == []
    assert (tmp_path / "empty").is_dir()


def test_unpack_overwrites_existing_file_and_accepts_dot_root(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old")
    tgz = make_tgz([(dir_info("."), None), (file_info("./a.txt"), b"new")])
    assert unpack_context(tgz, tmp_path) == ["a.txt"]
    assert (tmp_path / "a.txt").read_text() == "new"


def test_unpack_refuses_when_dest_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(ContextArchiveError, match="destination is not a directory"):
        unpack_context(pack_context([]), tmp_path / "f")


# --------------------------------------------------------------------------- malicious archives


def file_info(name: str, size: int = 0, **attrs: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    for key, value in attrs.items():
        setattr(info, key, value)
    return info


def dir_info(name: str) -> tarfile.TarInfo:
    return file_info(name, type=tarfile.DIRTYPE, mode=0o755)


def make_tar(members: list[tuple[tarfile.TarInfo, bytes | None]], end: bool = True) -> bytes:
    buf = io.BytesIO()
    for info, data in members:
        if data is not None:
            info.size = len(data)
        buf.write(info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape"))
        if data:
            buf.write(data + bytes(-len(data) % tarfile.BLOCKSIZE))
    if end:
        buf.write(bytes(2 * tarfile.BLOCKSIZE))
    return buf.getvalue()


def make_tgz(members: list[tuple[tarfile.TarInfo, bytes | None]], end: bool = True) -> bytes:
    return gzip.compress(make_tar(members, end), mtime=0)


def corrupt_second_header() -> bytes:
    raw = bytearray(make_tar([(file_info("a"), b"a"), (file_info("b"), b"b")]))
    raw[1024 + 148 : 1024 + 156] = b"9999999\0"  # bad checksum: tarfile just stops reading
    return gzip.compress(bytes(raw), mtime=0)


def bad_gzip_crc() -> bytes:
    data = bytearray(pack_context([ContextFile("a", 48, b"hello")]))
    data[-8] ^= 0xFF
    return bytes(data)


def lying_pax_header() -> bytes:
    # a pax extended header that claims 20 MiB: tarfile would read it all into memory
    info = file_info("././@PaxHeader", 20 * MiB, type=tarfile.XHDTYPE)
    raw = info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape") + bytes(20 * MiB)
    return gzip.compress(raw, compresslevel=1, mtime=0)


SMALL = {"max_total_bytes": 4096, "max_members": 4, "max_ratio": 1e9}

UNPACK_REFUSALS = [
    # (id, tgz factory, unpack kwargs, message fragment)
    ("symlink-etc", lambda: make_tgz([(file_info("etc", type=tarfile.SYMTYPE, linkname="/etc"),
     None)]), {}, "'etc': symbolic link members are not allowed (all links are refused)"),
    ("symlink-inside", lambda: make_tgz([(file_info("a"), b"a"),
     (file_info("b", type=tarfile.SYMTYPE, linkname="a"), None)]), {}, "symbolic link members"),
    ("symlink-then-write", lambda: make_tgz([(file_info("d", type=tarfile.SYMTYPE,
     linkname="/tmp"), None), (file_info("d/x"), b"x")]), {}, "symbolic link members"),
    ("hardlink", lambda: make_tgz([(file_info("h", type=tarfile.LNKTYPE,
     linkname="/etc/passwd"), None)]), {}, "'h': hard link members are not allowed"),
    ("dotdot", lambda: make_tgz([(file_info("../evil"), b"x")]), {},
     "archive member '../evil': path escapes the context directory"),
    ("dotdot-deep", lambda: make_tgz([(file_info("a/b/../../../evil"), b"x")]), {},
     "path escapes the context directory"),
    ("absolute", lambda: make_tgz([(file_info("/tmp/evil"), b"x")]), {}, "path is absolute"),
    ("backslash", lambda: make_tgz([(file_info("..\\evil"), b"x")]), {}, "backslash"),
    ("chardev", lambda: make_tgz([(file_info("null", type=tarfile.CHRTYPE), None)]), {},
     "character device members are not allowed"),
    ("blockdev", lambda: make_tgz([(file_info("sda", type=tarfile.BLKTYPE), None)]), {},
     "block device members are not allowed"),
    ("fifo", lambda: make_tgz([(file_info("p", type=tarfile.FIFOTYPE), None)]), {},
     "fifo members are not allowed"),
    ("contiguous", lambda: make_tgz([(file_info("c", type=tarfile.CONTTYPE), b"c")]), {},
     "unsupported member type"),
    ("duplicate", lambda: make_tgz([(file_info("a"), b"1"), (file_info("a"), b"2")]), {},
     "'a': duplicate member"),
    ("duplicate-normalised", lambda: make_tgz([(file_info("a/b"), b"1"),
     (file_info("./a//b"), b"2")]), {}, "duplicate member"),
    ("parent-is-file", lambda: make_tgz([(file_info("a"), b"1"), (file_info("a/b"), b"2")]),
     {}, "parent 'a' is a file"),
    ("too-many", lambda: make_tgz([(file_info(f"f{i}"), b"") for i in range(5)]), SMALL,
     "too many entries (5 > 4)"),
    ("declared-size", lambda: make_tgz([(file_info("big"), bytes(5000))]), SMALL,
     "'big': declared total size exceeds 4096 bytes"),
    ("declared-size-sum", lambda: make_tgz([(file_info("a"), bytes(3000)),
     (file_info("b"), bytes(3000))]), SMALL, "'b': declared total size exceeds"),
    ("gzip-bomb-declared", lambda: make_tgz([(file_info("zeros"), bytes(4 * MiB))]),
     {"max_total_bytes": MiB}, "declared total size exceeds 1048576 bytes"),
    ("gzip-bomb-ratio", lambda: make_tgz([(file_info("zeros"), bytes(4 * MiB))]), {},
     "compression ratio exceeds 200"),
    ("trailing-zeros-bomb", lambda: gzip.compress(make_tar([(file_info("a"), b"a")])
     + bytes(8 * MiB), mtime=0), SMALL, "decompressed stream exceeds"),
    ("lying-pax-header", lying_pax_header, SMALL, "decompressed stream exceeds"),
    ("truncated", lambda: pack_context([ContextFile("a", 48, os.urandom(5000))])[:2000], {},
     "corrupt or truncated archive"),
    ("garbage", lambda: b"this is not a tarball at all", {}, "corrupt or truncated archive"),
    ("gzip-of-garbage", lambda: gzip.compress(b"hello world " * 100), {},
     "corrupt or truncated archive"),
    ("bad-crc", bad_gzip_crc, {}, "corrupt or truncated archive"),
    ("trailing-junk", lambda: pack_context([]) + b"junk", {}, "corrupt or truncated archive"),
    ("corrupt-header", corrupt_second_header, {}, "no end-of-archive marker"),
    ("no-end-marker", lambda: make_tgz([(file_info("a"), b"a")], end=False), {},
     "no end-of-archive marker"),
    ("not-bytes", lambda: "a string", {}, "archive must be bytes"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("factory", "kwargs", "fragment"),
    [pytest.param(f, k, m, id=n) for n, f, k, m in UNPACK_REFUSALS],
)
def test_unpack_refusals(tmp_path: Path, factory, kwargs, fragment: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    dest = tmp_path / "dest"
    with pytest.raises(ContextArchiveError) as exc_info:
        unpack_context(factory(), dest, **kwargs)
    assert fragment in str(exc_info.value)
    assert not dest.exists()  # validation happens before anything is written
    assert snapshot(tmp_path) == {"outside": None, "outside/keep": b"keep"}


def test_unpack_refusal_leaves_existing_dest_untouched(tmp_path: Path) -> None:
    (tmp_path / "mine").write_text("mine")
    tgz = make_tgz([(file_info("ok"), b"ok"), (file_info("l", type=tarfile.LNKTYPE), None)])
    with pytest.raises(ContextArchiveError, match="hard link"):
        unpack_context(tgz, tmp_path)
    assert snapshot(tmp_path) == {"mine": b"mine"}


def test_unpack_refuses_existing_symlink_in_dest(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "sub").symlink_to(outside)
    tgz = pack_context([ContextFile("sub", 53), ContextFile("sub/evil", 48, b"x")])
    with pytest.raises(ContextArchiveError, match="is a symbolic link"):
        unpack_context(tgz, dest)
    assert list(outside.iterdir()) == []
    (dest / "sub").unlink()
    (dest / "f").symlink_to(outside / "target")
    with pytest.raises(ContextArchiveError, match="is a symbolic link"):
        unpack_context(pack_context([ContextFile("f", 48, b"x")]), dest)
    assert list(outside.iterdir()) == []


def test_unpack_refuses_type_clash_with_existing(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("file")
    with pytest.raises(ContextArchiveError, match="exists and is not a directory"):
        unpack_context(pack_context([ContextFile("a/b", 48, b"x")]), tmp_path)
    (tmp_path / "d").mkdir()
    with pytest.raises(ContextArchiveError, match="exists and is not a file"):
        unpack_context(pack_context([ContextFile("d", 48, b"x")]), tmp_path)
    assert snapshot(tmp_path) == {"a": b"file", "d": None}


def test_unpack_write_failure_removes_partial_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def failing_set_mtime(path: Path, mtime: int) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(ca, "_set_mtime", failing_set_mtime)
    (tmp_path / "pre").write_text("pre")
    files = [ContextFile("d", 53), ContextFile("d/a", 48, b"a"), ContextFile("d/b", 48, b"b")]
    with pytest.raises(ContextArchiveError, match="extraction failed"):
        unpack_context(pack_context(files), tmp_path / "dest")
    assert snapshot(tmp_path) == {"pre": b"pre"}


# --------------------------------------------------------------------------- property

_name = st.text(alphabet="abcXYZ019_-. ", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)
_rel_path = st.lists(_name, min_size=1, max_size=4).map("/".join)


@st.composite
def safe_trees(draw: st.DrawFn) -> dict[str, bytes]:
    paths = draw(st.sets(_rel_path, min_size=0, max_size=12))
    files = {p for p in paths if not any(q.startswith(p + "/") for q in paths)}
    return {p: draw(st.binary(max_size=64)) for p in sorted(files)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=safe_trees(), exec_bits=st.lists(st.booleans(), min_size=12, max_size=12))
def test_property_round_trip_stays_inside_dest(tree: dict[str, bytes], exec_bits: list) -> None:
    dirs = {p.rsplit("/", i)[0] for p in tree for i in range(1, p.count("/") + 1)}
    files = [ContextFile(d, 53) for d in sorted(dirs)]
    files += [
        ContextFile(p, 48, data, 1000 + i, 0o755 if exec_bits[i] else 0o644)
        for i, (p, data) in enumerate(tree.items())
    ]
    with tempfile.TemporaryDirectory() as tmp:
        outer = Path(tmp)
        (outer / "sentinel").write_bytes(b"s")
        dest = outer / "dest"
        written = unpack_context(pack_context(files), dest)
        assert written == sorted(f.path for f in files)
        everything = snapshot(outer)
        assert everything.pop("sentinel") == b"s"
        assert everything.pop("dest") is None
        assert all(p.startswith("dest/") for p in everything)
        got = {p[len("dest/") :]: v for p, v in everything.items()}
        assert got == {**{d: None for d in dirs}, **tree}
        for i, path in enumerate(tree):
            mode = stat.S_IMODE((dest / path).stat().st_mode)
            assert mode == (0o755 if exec_bits[i] else 0o644)
