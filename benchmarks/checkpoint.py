"""Checkpoint save/restore throughput: `python benchmarks/checkpoint.py` (run.py --only checkpoint).

A state dict of float32 tensors totalling ``--size-gib`` (default 1 GiB) is saved with torch.save
into a local checkpoint directory and uploaded with ``CheckpointContext.upload``; it is restored
with ``download`` + torch.load. The floor is a raw ``shutil.copyfile`` of the same bytes to (and
back from) the same storage in the same run; the target is >= 80 % of its throughput for both
directions. Also timed: ``store_path`` (torch.save straight into shared_fs, no copy) and
``restore_path`` + torch.load in place, and the same upload/download against S3 (moto's server on
127.0.0.1, the real boto3) next to a raw boto3 ``upload_file``/``download_file`` of the same file.

Each step runs ``--repeats`` times (median reported) after an ``os.sync()``, so one step's dirty
pages are not written back on the next step's clock; a harness step and its raw floor run
alternately (ABBA…), so drift in the machine's load falls on both alike. The page cache is not
dropped: both sides of each comparison read a file that is cached the same way.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `harness` importable, prefer the venv
    _repo = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(_repo))
    try:
        import torch  # noqa: F401
    except ImportError:
        _venv_python = _repo / ".venv" / "bin" / "python"
        if _venv_python.exists() and Path(sys.executable) != _venv_python:
            os.execv(str(_venv_python), [str(_venv_python), *sys.argv])
        raise

GiB = 1024**3
TARGET = 0.80


@dataclass
class Row:
    storage: str
    operation: str
    seconds: float
    nbytes: int
    floor: str | None = None  # the row this one is compared with
    ratio: float | None = None

    @property
    def gib_s(self) -> float:
        return self.nbytes / GiB / self.seconds if self.seconds > 0 else float("inf")


@dataclass
class CheckpointResult:
    size_bytes: int
    repeats: int
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def row(self, storage: str, operation: str) -> Row:
        return next(r for r in self.rows if r.storage == storage and r.operation == operation)

    def misses(self) -> list[str]:
        out = []
        for r in self.rows:
            if r.ratio is not None and r.floor and r.floor.startswith("raw") and r.ratio < TARGET:
                out.append(
                    f"{r.storage} {r.operation}: {r.ratio:.0%} of {r.floor} (target {TARGET:.0%})"
                )
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "size_bytes": self.size_bytes,
            "repeats": self.repeats,
            "rows": [asdict(r) | {"gib_s": r.gib_s} for r in self.rows],
            "notes": self.notes,
            "misses": self.misses(),
        }


def timed(fn: Callable[[], Any], repeats: int, before: Callable[[], Any] | None = None) -> float:
    """Median seconds of ``fn()`` over ``repeats`` runs; ``before()`` runs untimed each time."""
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        os.sync()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def paired(
    raw: Callable[[], Any],
    ours: Callable[[], Any],
    repeats: int,
    before: Callable[[], Any] | None = None,
) -> tuple[float, float]:
    """Median seconds of ``raw()`` and ``ours()``, run alternately (ABBA…) so that drift in the
    machine's load or disk state falls on both sides alike; ``before()`` runs untimed each time.
    """
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(repeats):
        order = [(raw, times[0]), (ours, times[1])]
        if i % 2:
            order.reverse()
        for fn, out in order:
            if before is not None:
                before()
            os.sync()
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return statistics.median(times[0]), statistics.median(times[1])


def state_dict(size: int) -> dict[str, Any]:
    import torch

    per = 64 * 1024 * 1024  # 64 MiB tensors
    n, rest = divmod(size, per)
    g = torch.Generator().manual_seed(0)
    out = {f"layer{i}.weight": torch.rand(per // 4, generator=g) for i in range(n)}
    if rest:
        out["tail"] = torch.rand(rest // 4, generator=g)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(
    size: int = GiB,
    repeats: int = 3,
    base_dir: str | None = None,
    s3: bool = True,
    say: Callable[[str], None] = print,
    s3_repeats: int | None = None,
) -> CheckpointResult:
    import torch

    from harness.core import DummyDistributedContext
    from harness.core._checkpoint import CheckpointContext
    from harness.core._storage import storage_from_config

    res = CheckpointResult(size_bytes=size, repeats=repeats)
    work = Path(tempfile.mkdtemp(prefix="harness-ckpt-bench-", dir=base_dir))
    try:
        say(f"building a {size / GiB:.2f} GiB state dict …")
        state = state_dict(size)
        local = work / "local"
        local.mkdir()
        ckpt_dir = local / "ckpt"
        ckpt_dir.mkdir()
        state_file = ckpt_dir / "state.pt"
        meta = {"steps_completed": 1}

        def serialize() -> None:
            torch.save(state, state_file)

        t_save = timed(serialize, repeats)
        nbytes = state_file.stat().st_size
        res.rows.append(Row("local disk", "torch.save (into the local ckpt dir)", t_save, nbytes))

        # ---- shared_fs -----------------------------------------------------------------------
        shared = work / "shared_fs"
        shared.mkdir()
        storage = storage_from_config(
            {"type": "shared_fs", "host_path": str(shared), "container_path": str(work / "none")}
        )
        ctx = CheckpointContext(DummyDistributedContext(), storage, None, "bench", None)
        back = local / "raw-back.pt"
        dl = local / "dl"
        ids: list[str] = []
        keep: list[str] = []  # the checkpoint restores read
        counter = iter(range(1_000_000))

        def fresh(where: Path) -> Path:
            # Every write goes to a new file, on both sides: on this machine's filesystem writing
            # a new file costs up to 3x overwriting a cached one, and every checkpoint is new.
            return where / f"raw-{next(counter)}.pt"

        def tidy() -> None:  # untimed, before each timed step: keep the disk from filling up
            for p in list(shared.glob("raw-*.pt")) + list(local.glob("raw-*.pt")):
                p.unlink()
            for sid in ids:
                if sid not in keep:
                    ctx.delete(sid)
            ids[:] = [i for i in ids if i in keep]
            back.unlink(missing_ok=True)
            shutil.rmtree(dl, ignore_errors=True)

        def raw_copy() -> None:
            shutil.copyfile(state_file, fresh(shared))

        def raw_save() -> None:
            tmp = fresh(local)
            torch.save(state, tmp)
            shutil.copyfile(tmp, fresh(shared))

        def save_upload() -> None:
            d = local / f"ckpt-{next(counter)}"
            d.mkdir()
            torch.save(state, d / "state.pt")
            ids.append(ctx.upload(d, meta))
            shutil.rmtree(d)

        def compare(what: str, floor: str, raw: Any, ours: Any) -> None:
            t_raw, t_ours = paired(raw, ours, repeats, tidy)
            if not any(r.operation == floor for r in res.rows):
                res.rows.append(Row("shared_fs", floor, t_raw, nbytes))
            res.rows.append(Row("shared_fs", what, t_ours, nbytes, floor, t_raw / t_ours))

        def load(path: Path) -> None:
            torch.load(path, weights_only=True)

        say("shared_fs: upload/download vs a raw copy …")
        compare(
            "upload()",
            "raw copy to storage (shutil.copyfile)",
            raw_copy,
            lambda: ids.append(ctx.upload(ckpt_dir, meta)),
        )
        keep.append(ids[-1])
        stored = shared / keep[0] / "state.pt"
        compare(
            "download()",
            "raw copy from storage",
            lambda: shutil.copyfile(stored, back),
            lambda: ctx.download(keep[0], dl),
        )
        say("shared_fs: save (torch.save + store) and restore (fetch + torch.load) …")
        compare(
            "save: torch.save + upload()", "raw save: torch.save + raw copy", raw_save, save_upload
        )

        def store_in_place() -> None:
            with ctx.store_path(meta) as (path, sid):
                torch.save(state, path / "state.pt")
            ids.append(sid)

        compare(
            "save: store_path() + torch.save in place",
            "raw save: torch.save + raw copy",
            raw_save,
            store_in_place,
        )
        compare(
            "restore: download() + torch.load",
            "raw restore: raw copy + torch.load",
            lambda: (shutil.copyfile(stored, back), load(back)),
            lambda: (ctx.download(keep[0], dl), load(dl / "state.pt")),
        )

        def restore_in_place() -> None:
            with ctx.restore_path(keep[0]) as path:
                load(path / "state.pt")

        compare(
            "restore: restore_path() + torch.load in place",
            "raw restore: raw copy + torch.load",
            lambda: (shutil.copyfile(stored, back), load(back)),
            restore_in_place,
        )
        keep.clear()
        tidy()

        if s3:
            bench_s3(res, ckpt_dir, nbytes, s3_repeats or repeats, meta, local, say)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


def bench_s3(
    res: CheckpointResult,
    ckpt_dir: Path,
    nbytes: int,
    repeats: int,
    meta: dict[str, Any],
    local: Path,
    say: Callable[[str], None],
) -> None:
    try:
        import boto3
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        res.notes.append(f"S3 skipped: {exc}")
        return
    from harness.core import DummyDistributedContext
    from harness.core._checkpoint import CheckpointContext
    from harness.core._storage_s3 import S3StorageManager

    say("s3 (moto on 127.0.0.1): raw boto3 vs upload/download …")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        sm = S3StorageManager(
            "bench", "ckpts", access_key="k", secret_key="s", endpoint_url=endpoint
        )
        sm.client.create_bucket(Bucket="bench")
        client = boto3.client(
            "s3", endpoint_url=endpoint, aws_access_key_id="k", aws_secret_access_key="s"
        )
        ctx = CheckpointContext(DummyDistributedContext(), sm, None, "bench", None)
        src = ckpt_dir / "state.pt"
        ids: list[str] = []
        t_raw, t_up = paired(
            lambda: client.upload_file(str(src), "bench", "raw/state.pt", Config=sm.transfer),
            lambda: ids.append(ctx.upload(ckpt_dir, meta)),
            repeats,
        )
        res.rows.append(Row("s3 (moto)", "raw boto3 upload_file", t_raw, nbytes))
        res.rows.append(
            Row("s3 (moto)", "upload()", t_up, nbytes, "raw boto3 upload_file", t_raw / t_up)
        )
        back = local / "s3-raw-back.pt"
        dl = local / "s3-dl"

        def clear() -> None:
            back.unlink(missing_ok=True)
            shutil.rmtree(dl, ignore_errors=True)

        t_raw_back, t_down = paired(
            lambda: client.download_file("bench", "raw/state.pt", str(back), Config=sm.transfer),
            lambda: ctx.download(ids[-1], dl),
            repeats,
            clear,
        )
        res.rows.append(Row("s3 (moto)", "raw boto3 download_file", t_raw_back, nbytes))
        res.rows.append(
            Row("s3 (moto)", "download()", t_down, nbytes, "raw boto3 download_file",
                t_raw_back / t_down)
        )  # fmt: skip
        for sid in set(ids):
            ctx.delete(sid)
        back.unlink(missing_ok=True)
        shutil.rmtree(dl, ignore_errors=True)
    finally:
        server.stop()


def table(res: CheckpointResult) -> str:
    head = ["storage", "operation", "median s", "GiB/s", "vs", "ratio"]
    lines = [
        [
            r.storage,
            r.operation,
            f"{r.seconds:.2f}",
            f"{r.gib_s:.2f}",
            r.floor or "",
            f"{r.ratio:.0%}" if r.ratio is not None else "",
        ]
        for r in res.rows
    ]
    widths = [max(len(x) for x in col) for col in zip(head, *lines, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*line) for line in lines]
    return "\n".join(out)


def print_result(res: CheckpointResult) -> None:
    print(
        f"Checkpoint save/restore: {res.size_bytes / GiB:.2f} GiB state dict, "
        f"median of {res.repeats}"
    )
    print(table(res))
    for note in res.notes:
        print(f"note: {note}")
    misses = res.misses()
    print(
        f"Target (upload and download >= {TARGET:.0%} of the raw copy): "
        + ("met." if not misses else "missed: " + "; ".join(misses))
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/checkpoint.py", description=__doc__)
    p.add_argument("--size-gib", type=float, default=1.0, help="state dict size (1 GiB)")
    p.add_argument("--repeats", type=int, default=5, help="runs per step, median (5)")
    p.add_argument("--s3-repeats", type=int, default=3, help="runs per S3 step, median (3)")
    p.add_argument("--dir", help="where the local and shared_fs directories go (a temp dir)")
    p.add_argument("--no-s3", action="store_true", help="skip the S3 (moto) figures")
    p.add_argument("--json", type=Path, help="also write the results as JSON here")
    p.add_argument("--fail-on-miss", action="store_true", help="exit 1 when a target is missed")
    args = p.parse_args(argv)
    res = run(
        int(args.size_gib * GiB),
        args.repeats,
        args.dir,
        s3=not args.no_s3,
        say=lambda t: print(t, file=sys.stderr, flush=True),
        s3_repeats=args.s3_repeats,
    )
    print_result(res)
    if args.json:
        args.json.write_text(json.dumps(res.as_json(), indent=2))
    return 1 if (res.misses() and args.fail_on_miss) else 0


if __name__ == "__main__":
    sys.exit(main())
