"""The quick start's wait: poll an experiment until it ends, printing its state and its first
trial's progress (state, batches out of the searcher's max_length, the latest training loss)
each time one of them changes, and every ``--heartbeat`` seconds while nothing does.

    python scripts/quickstart_wait.py EXPERIMENT_ID [--timeout 600] [--trial-file PATH]

Talks to $DET_MASTER as $DET_USER / $DET_PASS (the quick start's admin). Exit 0 when the
experiment COMPLETED, 1 when it ended otherwise or the timeout passed (the message says which).
Elapsed times count from RESOLUTE_T0 (epoch seconds), as scripts/setup.sh's steps do.
``--trial-file`` receives the first trial's id once there is one (what the script describes).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

TERMINAL = {"STATE_COMPLETED", "STATE_CANCELED", "STATE_ERROR", "STATE_DELETED"}


def _state(value: object) -> str:
    return str(value or "").removeprefix("STATE_") or "?"


def max_batches(config: Mapping[str, Any]) -> int | None:
    """The searcher's max_length in batches, where the config says it that way."""
    length = (config.get("searcher") or {}).get("max_length")
    if isinstance(length, int):
        return length
    if isinstance(length, Mapping) and isinstance(length.get("batches"), int):
        return int(length["batches"])
    return None


def progress(experiment_id: int, reply: Mapping[str, Any], trials: list[Mapping[str, Any]]) -> str:
    """One line: the experiment's state and its first trial's (pure)."""
    experiment = reply.get("experiment") or {}
    line = f"experiment {experiment_id} {_state(experiment.get('state'))}"
    if not trials:
        return line + ", waiting for its trial to be created"
    trial = min(trials, key=lambda t: int(t["id"]))
    line += f", trial {trial['id']} {_state(trial.get('state'))}"
    done = int(trial.get("totalBatchesProcessed") or 0)
    total = max_batches(reply.get("config") or experiment.get("config") or {})
    line += f": {done}/{total} batches" if total else f": {done} batches"
    latest = ((trial.get("latestTraining") or {}).get("metrics") or {}).get("avgMetrics") or {}
    if isinstance(latest.get("loss"), int | float):
        line += f", loss {latest['loss']:.4g}"
    return line


def clock(t0: float, now: float) -> str:
    seconds = max(0, int(now - t0))
    return f"[{seconds // 60}:{seconds % 60:02d}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment_id", type=int)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--poll", type=float, default=1.0)
    parser.add_argument("--heartbeat", type=float, default=10.0)
    parser.add_argument("--trial-file", default=None)
    args = parser.parse_args(argv)

    from cli.auth import login
    from cli.client import ApiClient

    t0 = float(os.environ.get("RESOLUTE_T0") or time.time())
    exp = args.experiment_id
    deadline = time.monotonic() + args.timeout
    last, said_at, state = "", 0.0, ""
    with ApiClient(os.environ["DET_MASTER"], retries=2) as client:
        client.token = login(client, os.environ["DET_USER"], os.environ["DET_PASS"]).token
        while True:
            reply = client.get(f"/api/v1/experiments/{exp}")
            trials = client.get(f"/api/v1/experiments/{exp}/trials").get("trials") or []
            state = str((reply.get("experiment") or {}).get("state") or "")
            if trials and args.trial_file:
                first = min(int(t["id"]) for t in trials)
                with open(args.trial_file, "w") as out:
                    out.write(f"{first}\n")
            line = progress(exp, reply, trials)
            now = time.monotonic()
            if line != last or now - said_at >= args.heartbeat:
                print(f"{clock(t0, time.time())} {line}", flush=True)
                last, said_at = line, now
            if state in TERMINAL or now > deadline:
                break
            time.sleep(args.poll)
    if state == "STATE_COMPLETED":
        return 0
    if state in TERMINAL:
        print(f"quickstart: experiment {exp} ended {_state(state)}, not COMPLETED", file=sys.stderr)
    else:
        print(
            f"quickstart: experiment {exp} did not complete within {args.timeout:g} s "
            f"(state {_state(state)})",
            file=sys.stderr,
        )
    return 1


if __name__ == "__main__":
    sys.exit(main())
