"""``python3 -m harness.launch.wrap_rank RANK_VAR -- SCRIPT...``: run SCRIPT, prefixing each line
of its output with ``[rank=N] `` (N from the variable RANK_VAR), as Determined's
``determined.launch.wrap_rank`` does; the log shipper reads the prefix into the line's rank.

Determined's own form works too: ``[--no-redirect-stdio] RANK SCRIPT...``, RANK an integer or
a comma-separated list of variables tried in order (the flag is accepted and changes nothing:
output always goes to this process's stdout and stderr).

Signals SIGTERM and SIGINT are passed to SCRIPT; the exit code is SCRIPT's (128+N when killed by
signal N, 127 when it cannot be started).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from types import FrameType
from typing import IO

USAGE = "usage: python3 -m harness.launch.wrap_rank [--no-redirect-stdio] RANK [--] SCRIPT..."


def _pump(src: IO[bytes], dst: IO[bytes], prefix: bytes) -> None:
    for line in iter(src.readline, b""):
        dst.write(prefix + line)
        dst.flush()
    src.close()


def parse_args(argv: list[str]) -> tuple[str, list[str]] | None:
    """(RANK, SCRIPT), or None when the arguments do not make a command."""
    args = list(argv)
    if args[:1] == ["--no-redirect-stdio"]:
        args = args[1:]
    if len(args) < 2:
        return None
    var, script = args[0], args[1:]
    if script[0] == "--":
        script = script[1:]
    return (var, script) if script else None


def rank_of(var: str, env: dict[str, str] | os._Environ[str]) -> str:
    """An integer as it is, else the first of the comma-separated variables that is set."""
    if var.isdigit():
        return var
    for name in var.split(","):
        if name in env:
            return env[name]
    return ""


def main(argv: list[str]) -> int:
    parsed = parse_args(argv)
    if parsed is None:
        print(USAGE, file=sys.stderr)
        return 2
    var, script = parsed
    rank = rank_of(var, os.environ)
    if not rank.isdigit():
        print(f"wrap_rank: {var} is not set to a rank ({rank!r})", file=sys.stderr)
        return 2
    prefix = f"[rank={rank}] ".encode()
    try:
        child = subprocess.Popen(script, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        print(f"wrap_rank: cannot start {script[0]!r}: {exc}", file=sys.stderr)
        return 127

    def forward(signum: int, _frame: FrameType | None) -> None:
        child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    assert child.stdout is not None and child.stderr is not None
    pumps = [
        threading.Thread(target=_pump, args=(child.stdout, sys.stdout.buffer, prefix), daemon=True),
        threading.Thread(target=_pump, args=(child.stderr, sys.stderr.buffer, prefix), daemon=True),
    ]
    for t in pumps:
        t.start()
    code = child.wait()
    for t in pumps:
        t.join()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
