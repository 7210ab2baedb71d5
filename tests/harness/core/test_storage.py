"""Storage managers: names, globs, the directory (shared_fs) manager, config shortcuts."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core._storage import (
    CheckpointNotFound,
    DirectoryStorageManager,
    StorageNotSupported,
    apply_globs,
    check_storage_id,
    glob_regex,
    list_directory,
    safe_relpath,
    storage_from_config,
    storage_from_string,
)


def tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


class TestNames:
    @pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\\b", "x\x00"])
    def test_bad_storage_ids(self, bad: str) -> None:
        with pytest.raises(ValueError, match="invalid checkpoint id"):
            check_storage_id(bad)

    def test_good_storage_id(self) -> None:
        assert check_storage_id("0b0e-uuid") == "0b0e-uuid"

    @pytest.mark.parametrize("bad", ["../x", "a/../../x", "/etc/passwd", "", "a\\b", "./.."])
    def test_relpaths_that_climb_out_are_refused(self, bad: str) -> None:
        with pytest.raises(ValueError):
            safe_relpath(bad)

    def test_relpaths_are_normalized(self) -> None:
        assert safe_relpath("./a//b/c") == "a/b/c"
        assert safe_relpath("a/b/") == "a/b/"


class TestGlobs:
    RES = {"a/": 0, "a/x.pt": 1, "a/b/": 0, "a/b/y.pt": 2, "m.json": 3, "z.pt": 4}

    @pytest.mark.parametrize(
        ("pattern", "name", "hit"),
        [
            ("*.pt", "z.pt", True),
            ("*.pt", "a/x.pt", False),
            ("**/*.pt", "a/b/y.pt", True),
            ("**/*.pt", "z.pt", True),
            ("a/*", "a/b", True),
            ("a/?.pt", "a/x.pt", True),
            ("m.json", "m.json", True),
        ],
    )
    def test_glob_matching(self, pattern: str, name: str, hit: bool) -> None:
        assert bool(glob_regex(pattern).match(name)) is hit

    @pytest.mark.parametrize("bad", ["../*", "/abs/*", "a/../../b", ""])
    def test_globs_that_climb_out_are_refused(self, bad: str) -> None:
        with pytest.raises(ValueError):
            apply_globs(self.RES, [bad])

    def test_everything(self) -> None:
        gone, left = apply_globs(self.RES, ["**/*"])
        assert gone == ["a/b/y.pt", "a/x.pt", "m.json", "z.pt"] and left == {}

    def test_a_directory_glob_takes_its_contents(self) -> None:
        gone, left = apply_globs(self.RES, ["a/b"])
        assert gone == ["a/b/y.pt"]
        assert left == {"a/": 0, "a/x.pt": 1, "m.json": 3, "z.pt": 4}

    def test_some_files(self) -> None:
        gone, left = apply_globs(self.RES, ["*.pt"])
        assert gone == ["z.pt"] and "z.pt" not in left and "a/x.pt" in left


class TestDirectoryManager:
    def test_upload_download_selectors_and_listing(self, tmp_path: Path) -> None:
        src = tree(tmp_path / "src", {"w.bin": b"ww", "sub/o.bin": b"o", "skip.tmp": b"s"})
        sm = DirectoryStorageManager(tmp_path / "store")
        sm.upload(src, "ck1", paths={"w.bin", "sub/o.bin"})
        assert sm.list_files("ck1") == {"sub/": 0, "sub/o.bin": 1, "w.bin": 2}
        sm.download("ck1", tmp_path / "dst", selector=lambda n: n.startswith("sub/"))
        assert list_directory(tmp_path / "dst") == {"sub/": 0, "sub/o.bin": 1}
        with sm.restore_path("ck1") as p:
            assert p == tmp_path / "store" / "ck1"

    def test_delete_by_globs_answers_what_is_left(self, tmp_path: Path) -> None:
        sm = DirectoryStorageManager(tmp_path)
        tree(tmp_path / "ck", {"a/x.pt": b"x", "a/b/y.pt": b"yy", "m.json": b"{}"})
        assert sm.delete("ck", ["a/b"]) == {"a/": 0, "a/x.pt": 1, "m.json": 2}
        assert not (tmp_path / "ck" / "a" / "b").exists()
        assert sm.delete("ck") == {} and not (tmp_path / "ck").exists()
        assert sm.delete("never-there") == {}

    def test_unknown_checkpoint(self, tmp_path: Path) -> None:
        sm = DirectoryStorageManager(tmp_path)
        with pytest.raises(CheckpointNotFound, match="nope not found"), sm.restore_path("nope"):
            pass
        with pytest.raises(CheckpointNotFound):
            sm.download("nope", tmp_path / "d")

    def test_uploading_a_missing_directory(self, tmp_path: Path) -> None:
        sm = DirectoryStorageManager(tmp_path / "store")
        with pytest.raises(FileNotFoundError, match="does not exist"):
            sm.upload(tmp_path / "gone", "ck")


class TestConfig:
    def test_directory_and_shared_fs(self, tmp_path: Path) -> None:
        d = storage_from_config({"type": "directory", "container_path": str(tmp_path)})
        assert isinstance(d, DirectoryStorageManager) and d.base == tmp_path
        s = storage_from_config({"type": "shared_fs", "host_path": str(tmp_path)})
        assert isinstance(s, DirectoryStorageManager) and s.kind == "shared_fs"

    def test_unknown_type(self) -> None:
        with pytest.raises(StorageNotSupported, match="azure"):
            storage_from_config({"type": "azure", "container": "c"})

    def test_shortcuts(self, tmp_path: Path) -> None:
        assert storage_from_string(str(tmp_path)).describe() == str(tmp_path)
        assert storage_from_string(f"file://{tmp_path}").describe() == str(tmp_path)
        s3 = storage_from_string("s3://bkt/some/prefix")
        assert s3.describe() == "s3://bkt/some/prefix"
        with pytest.raises(ValueError, match="scheme"):
            storage_from_string("ftp://x/y")
        with pytest.raises(ValueError, match="malformed"):
            storage_from_string("s3://b/p?x=1")

    def test_a_prefix_that_climbs_out_is_refused(self) -> None:
        with pytest.raises(ValueError, match=r"\.\."):
            storage_from_config({"type": "s3", "bucket": "b", "prefix": "a/../.."})


def test_folders_made_above_checkpoints_are_every_task_users(tmp_path: Path) -> None:
    """Tasks run as their owners' Unix users: the first to write into a shared storage makes
    its storage_path folder 1777 (as /tmp), so every other user's tasks add theirs; the
    checkpoint itself stays its writer's (the umask's mode), and existing folders are kept."""
    import stat

    from harness.core._storage import DirectoryStorageManager, make_shared_dirs

    host = tmp_path / "host"
    host.mkdir(mode=0o755)
    manager = DirectoryStorageManager(host / "a" / "storage")
    path = manager.prepare("00000000-0000-4000-8000-000000000001")
    for folder in (host / "a", host / "a" / "storage"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o1777, folder
    assert stat.S_IMODE(host.stat().st_mode) == 0o755
    assert stat.S_IMODE(path.stat().st_mode) & 0o022 == 0
    make_shared_dirs(host / "a" / "storage")  # already there: nothing changes
    (host / "mine").mkdir(mode=0o700)
    make_shared_dirs(host / "mine")
    assert stat.S_IMODE((host / "mine").stat().st_mode) == 0o700


def test_tensorboard_folders_shared_by_every_user(tmp_path: Path) -> None:
    """<cluster>/tensorboard/experiment is every user's (1777); below it, the writer's."""
    import stat

    from harness.core._tensorboard import TensorboardManager, sync_path

    local = tmp_path / "tb"
    local.mkdir()
    (local / "events.out").write_text("e")
    dest = tmp_path / "storage" / sync_path("c1", 3, 7)
    TensorboardManager(local, dest, shared=dest.parents[2]).sync(force=True)
    assert (dest / "events.out").read_text() == "e"
    shared = tmp_path / "storage" / "c1" / "tensorboard" / "experiment"
    for folder in (tmp_path / "storage", tmp_path / "storage" / "c1", shared.parent, shared):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o1777, folder
    assert stat.S_IMODE((shared / "3").stat().st_mode) != 0o1777
