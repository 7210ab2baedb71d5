"""The quick start on a fresh copy of this checkout: `python benchmarks/quickstart.py` (about 2
minutes and 1.5 GB of disk while it runs; `benchmarks/run.py --only quickstart`, and after the
web UI's table with `--only webui`).

Target (issue 42): `bash scripts/quickstart.sh` on a fresh clone reaches a COMPLETED experiment
in <= 2 minutes. The copy is what a clone of the tree as it stands would hold (`git ls-files`:
tracked files and new ones git does not ignore; `--head` clones the last commit instead): no
.venv, no built web UI, no node_modules, no .data. The script runs with the port and data
directory of its own (RESOLUTE_PORT, RESOLUTE_DATA_DIR), so it never meets a deployment on
8080; pip and npm download for real (their caches as the machine has them; `--no-pip-cache`
empties pip's). The table splits the time at the script's own step lines (setup, `det deploy
local up`, the experiment), shows the CPU seconds the script's processes used (less sensitive to
the machine's load than the wall clock) and the 1-minute load average before and after.
`--rerun` times a second run in the same copy (everything reused, the deployment already up).
The deployment is stopped and the copy removed at the end (`--keep` keeps the copy).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.servers import free_port

REPO = Path(__file__).resolve().parent.parent
TARGET_S = 120.0
STEP = re.compile(r"^\[(\d+):(\d\d)\] (.*)$")


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    rc: int
    steps: list[tuple[int, str]] = field(default_factory=list)  # (seconds, text)
    tail: str = ""

    def at(self, prefix: str) -> int | None:
        """When the first step line starting with ``prefix`` was printed."""
        return next((t for t, text in self.steps if text.startswith(prefix)), None)


def fresh_copy(dest: Path, head: bool) -> None:
    if head:
        subprocess.run(["git", "clone", "-q", str(REPO), str(dest)], check=True)
        return
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        rel = raw.decode()
        src = REPO / rel
        if not src.is_file():  # deleted in the tree but still in the index
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
        os.utime(target)  # a clone's files are as new as the clone


def run_quickstart(copy: Path, env: dict[str, str], log: Path, args: list[str]) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    steps: list[tuple[int, str]] = []
    lines: list[str] = []
    with open(log, "a") as out:
        proc = subprocess.Popen(
            ["bash", "scripts/quickstart.sh", *args],
            cwd=copy,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            lines.append(line)
            match = STEP.match(line.rstrip("\n"))
            if match:
                steps.append((int(match[1]) * 60 + int(match[2]), match[3]))
                print(f"  {line.rstrip()}", flush=True)
        rc = proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    wall = time.perf_counter() - started
    return Run(wall_s=wall, cpu_s=cpu, rc=rc, steps=steps, tail="".join(lines[-30:]))


def _du(path: Path) -> str:
    done = subprocess.run(["du", "-sh", str(path)], capture_output=True, text=True, check=False)
    return done.stdout.split()[0] if done.returncode == 0 and done.stdout else "?"


def rows_for(first: Run, second: Run | None, venv_size: str) -> list[tuple[str, str, str, str]]:
    setup = first.at("setup done")
    up = first.at("submitting")
    done = first.at("Experiment")
    verdict = "ok" if first.rc == 0 and first.wall_s <= TARGET_S else "MISS"
    rows = [
        (
            "quick start: fresh clone to COMPLETED",
            f"{first.wall_s:.0f} s",
            f"{first.cpu_s:.0f} CPU s; exit {first.rc}",
            verdict,
        ),
        ("  setup (.venv, pip, web UI)", f"{setup} s" if setup is not None else "?", venv_size, ""),
    ]
    if setup is not None and up is not None:
        rows.append(("  det deploy local up", f"{up - setup} s", "master, agent, task venv", ""))
    if up is not None and done is not None:
        rows.append(("  experiment: submit to COMPLETED, describe", f"{done - up} s", "", ""))
    if second is not None:
        rows.append(
            (
                "quick start again (all reused)",
                f"{second.wall_s:.0f} s",
                f"{second.cpu_s:.0f} CPU s; exit {second.rc}",
                "ok" if second.rc == 0 else "MISS",
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Prints the table; returns the number of targets missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--head", action="store_true", help="clone the last commit instead")
    parser.add_argument("--rerun", action="store_true", help="also time a second run")
    parser.add_argument("--keep", action="store_true", help="keep the copy (path printed)")
    parser.add_argument("--no-pip-cache", action="store_true", help="PIP_NO_CACHE_DIR=1")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="quickstart-bench-"))
    copy = work / "resolute"
    log = work / "quickstart.log"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DET_", "RESOLUTE_", "VIRTUAL"))
    }
    env.update(RESOLUTE_PORT=str(free_port()), RESOLUTE_DATA_DIR=str(copy / ".data"))
    env["DET_DEBUG_CONFIG_PATH"] = str(work / "det-config")  # not the caller's token cache
    if args.no_pip_cache:
        env["PIP_NO_CACHE_DIR"] = "1"
    load = os.getloadavg()[0]
    try:
        fresh_copy(copy, args.head)
        print(f"quick start in {copy} (port {env['RESOLUTE_PORT']}, log {log})", flush=True)
        first = run_quickstart(copy, env, log, [])
        if first.rc != 0:
            print(first.tail, file=sys.stderr)
        second = run_quickstart(copy, env, log, []) if args.rerun and first.rc == 0 else None
        venv_size = f".venv {_du(copy / '.venv')}"
    finally:
        if (copy / ".venv" / "bin" / "det").exists():
            subprocess.run(
                ["bash", "scripts/quickstart.sh", "stop"],
                cwd=copy,
                env=env,
                capture_output=True,
                check=False,
            )
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    rows = rows_for(first, second, venv_size)
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    header = ("what", "value", "detail", "verdict")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    print(
        f"(target <= {TARGET_S:.0f} s; {os.cpu_count()} CPUs, 1-min load {load:.2f} before / "
        f"{os.getloadavg()[0]:.2f} after{'; copy kept in ' + str(copy) if args.keep else ''})"
    )
    return sum(1 for r in rows if r[3] == "MISS")


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
