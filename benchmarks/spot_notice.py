"""Benchmark: from a spot notice to a safe trial, and from unmet demand to the launch call.

The issue's targets: notice → safe p95 ≤ 25 s with a 1 GiB checkpoint (AWS warns 120 s ahead,
GCP 30 s); the progress lost no more than the time since the last checkpoint; unmet demand
reaches the cloud's launch call within one provisioner tick.

Set-up, all on 127.0.0.1: the real master (`det deploy local`, no static agents) with one AWS
pool (0 to 2 instances of 2 slots, the default provisioner tick unless told otherwise) whose
boto3 calls go to moto in server mode, in this process; the test instance runner boots each
instance moto shows running by executing the user data the master rendered, so a real
`det-agent` (process runtime, interruption watch `aws`, the agent's default 5 s poll) registers
under the instance id. One experiment: a 1-slot trial (benchmarks/spot_notice_workload) that
reports a step every `step_s`, saves a `size_mib` checkpoint to shared_fs every `ckpt_every`
steps and when preempted.

Per notice: wait until the trial trains on an instance, then a random part of a checkpoint
period (seeded), raise the instance's spot notice on its metadata server, and poll the API every
0.1 s until (a) a new checkpoint is COMPLETED and (b) the trial's allocation has ended (its slots
are free). "Safe" is the later of the two. The instance is then terminated in moto, as AWS
would; the provisioner launches a replacement for the re-queued trial, and the next notice
goes to that one.

- Progress lost: steps the trial reported before it stopped that its resume checkpoint lacks,
  times `step_s`; shown beside the time since its last periodic checkpoint at the notice (what
  a kill without notice would lose) and the checkpoint period.
- Reaction: submit → the provisioner's `launch` decision (taken just before the cloud call),
  and for each replacement the allocation's end → the next `launch` decision; the tick is the
  bound. Times come from the master's API (decision and allocation timestamps); all processes
  share this machine's clock.

Run: ``python benchmarks/run.py --only spot_notice [--quick]`` or
``python -m benchmarks.spot_notice --notices 5``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` and `tests` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import pytest

from benchmarks.provisioning import print_table
from cli.commands.experiment_create import build_request, read_context
from cli.deploy import local
from tests.support.elastic import (
    POOL,
    agents_of_allocations,
    aws_provider,
    master_config,
    moto_view,
)
from tests.support.instance_runner import InstanceRunner
from tests.support.moto_server import MotoEc2, fresh_moto

TARGET_SAFE_P95_S = 25.0
WORKLOAD = Path(__file__).resolve().parent / "spot_notice_workload"
POLL_S = 0.1


@dataclass
class NoticeSample:
    """One notice: when things happened, in seconds after the notice."""

    instance_id: str
    to_checkpoint_s: float  # the new checkpoint COMPLETED in the API
    to_released_s: float  # the allocation ended: its slots are free
    checkpoint_step: int
    last_step: int  # the last step the stopped run reported
    # At the notice: the training since the last committed checkpoint (steps * step_s), what a
    # kill without notice would lose.
    since_checkpoint_s: float
    lost_s: float  # (last_step - checkpoint_step) * step_s

    @property
    def safe_s(self) -> float:
        return max(self.to_checkpoint_s, self.to_released_s)


@dataclass
class SpotNoticeResult:
    notices: int
    size_mib: int
    step_s: float
    ckpt_every: int
    tick_s: float
    poll_s: float
    samples: list[NoticeSample] = field(default_factory=list)
    first_reaction_s: float | None = None  # submit → launch decision
    replacement_reactions_s: list[float] = field(default_factory=list)  # released → launch
    checkpoint_period_s: float | None = None  # measured between periodic checkpoints
    load_before: float = 0.0
    load_after: float = 0.0

    @property
    def reactions_s(self) -> list[float]:
        first = [] if self.first_reaction_s is None else [self.first_reaction_s]
        return first + self.replacement_reactions_s

    def misses(self) -> list[str]:
        out = []
        safe = [s.safe_s for s in self.samples]
        if safe and p95(safe) > TARGET_SAFE_P95_S:
            out.append(
                f"spot notice → safe: p95 {p95(safe):.1f} s (target ≤ {TARGET_SAFE_P95_S:.0f} s)"
            )
        for s in self.samples:
            if s.lost_s > s.since_checkpoint_s + self.step_s:
                out.append(
                    f"spot notice on {s.instance_id}: lost {s.lost_s:.1f} s of progress, more "
                    f"than the {s.since_checkpoint_s:.1f} s since its last checkpoint"
                )
        if any(r > self.tick_s for r in self.reactions_s):
            out.append(
                f"reaction: max {max(self.reactions_s):.2f} s to the launch call "
                f"(target ≤ one tick, {self.tick_s:g} s)"
            )
        return out

    def table(self) -> tuple[str, list[str], list[list[str]], list[str]]:
        """(title, header, rows, notes) in the shape benchmarks/provisioning.print_table prints."""
        title = (
            f"Spot notice → safe — {len(self.samples)} notices, {self.size_mib:,} MiB checkpoint "
            f"on shared_fs; AWS via moto, agents polling metadata every {self.poll_s:g} s"
        )
        header = ["measure", "median s", "p95 s", "max s", "n", "target"]
        rows: list[list[str]] = []

        def row(name: str, values: Sequence[float], target: str) -> None:
            if values:
                rows.append(
                    [
                        name,
                        f"{statistics.median(values):.2f}",
                        f"{p95(values):.2f}",
                        f"{max(values):.2f}",
                        str(len(values)),
                        target,
                    ]
                )

        safe = [s.safe_s for s in self.samples]
        verdict = "MISSED" if safe and p95(safe) > TARGET_SAFE_P95_S else "met"
        row("notice → checkpoint committed", [s.to_checkpoint_s for s in self.samples], "")
        row("notice → slots released", [s.to_released_s for s in self.samples], "")
        row("notice → safe (both)", safe, f"p95 ≤ {TARGET_SAFE_P95_S:.0f} s: {verdict}")
        lost_ok = all(s.lost_s <= s.since_checkpoint_s + self.step_s for s in self.samples)
        row(
            "progress lost",
            [s.lost_s for s in self.samples],
            f"≤ time since checkpoint: {'met' if lost_ok else 'MISSED'}",
        )
        row("training since checkpoint at notice", [s.since_checkpoint_s for s in self.samples], "")
        slow = any(r > self.tick_s for r in self.reactions_s)
        tick = f"≤ tick {self.tick_s:g} s: {'MISSED' if slow else 'met'}"
        if self.first_reaction_s is not None:
            row("reaction: submit → launch call", [self.first_reaction_s], tick)
        row("reaction: re-queued → replacement launch", self.replacement_reactions_s, tick)
        period = self.ckpt_every * self.step_s
        gap = self.checkpoint_period_s
        measured = f", measured {gap:.1f} s" if gap else ""
        notes = [
            f"checkpoint every {self.ckpt_every} steps of {self.step_s:g} s "
            f"(≈{period:g} s of training{measured}); one more when preempted",
            f"provisioner tick {self.tick_s:g} s; p95 is nearest-rank (the max below 20 samples)",
            f"1-min load average {self.load_before} before / {self.load_after} after",
        ]
        return title, header, rows, notes

    def as_json(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k != "samples"}
        data["samples"] = [{**asdict(s), "safe_s": s.safe_s} for s in self.samples]
        data["target_safe_p95_s"] = TARGET_SAFE_P95_S
        data["target_misses"] = self.misses()
        return data


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {timeout:g} s")
        time.sleep(POLL_S)


class Master:
    """A small REST client for the benchmark's master."""

    def __init__(self, url: str, token: str, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )

    def get(self, path: str, **params: Any) -> Any:
        r = self.http.get(path, params=params or None)
        r.raise_for_status()
        return r.json()

    def post(self, path: str, body: Any) -> Any:
        r = self.http.post(path, json=body)
        if r.status_code >= 400:
            raise RuntimeError(f"POST {path}: {r.status_code} {r.text[:500]}")
        return r.json() if r.content else None

    def checkpoints(self, trial_id: int) -> list[dict[str, Any]]:
        found = self.get(f"/api/v1/trials/{trial_id}/checkpoints")["checkpoints"]
        return [c for c in found if c["state"] == "STATE_COMPLETED"]

    def steps(self, trial_id: int) -> list[int]:
        workloads = self.get(f"/api/v1/trials/{trial_id}/workloads", limit=100_000)["workloads"]
        return [int(w["training"]["totalBatches"]) for w in workloads if w.get("training")]

    def live(self) -> dict[str, str]:
        """allocation id → agent id of every live allocation."""
        return dict(agents_of_allocations(self.get("/api/v1/tasks")))

    def launches_after(self, t: float) -> list[float]:
        view = self.get(f"/api/v1/resource-pools/{POOL}/provisioner")
        stamps = [_ts(d["at"]) for d in view["decisions"] if d["kind"] == "launch"]
        return sorted(s for s in stamps if s >= t)


@contextlib.contextmanager
def _deployment(workdir: Path, config: str) -> Iterator[Master]:
    data_dir = workdir / "deploy"
    data_dir.mkdir(parents=True)
    (data_dir / "master.yaml").write_text(config)
    options = local.LocalOptions(
        data_dir=data_dir, agents=0, slots_per_agent=None, runtime="process",
        port=_free_port(), master_config=data_dir / "master.yaml",
    )  # fmt: skip
    started = local.up(options, python=sys.executable, timeout_s=120)
    master = Master(options.master_url, started.token, data_dir)
    try:
        yield master
    finally:
        master.http.close()
        local.down(data_dir, grace_s=5)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _experiment(notices: int, size_mib: int, step_s: float, ckpt_every: int) -> dict[str, Any]:
    steps = 100_000  # killed when the notices are done
    return {
        "name": "spot-notice-benchmark",
        "entrypoint": "python3 train.py",
        "hyperparameters": {
            "steps": steps,
            "step_s": step_s,
            "ckpt_every": ckpt_every,
            "size_mib": size_mib,
        },
        "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": steps}},
        "resources": {"slots_per_trial": 1},
        "max_restarts": 0,
    }


def _submit(master: Master, config: dict[str, Any]) -> int:
    """POST /api/v1/experiments with the body `det experiment create` sends."""
    body = build_request(json.dumps(config), read_context(WORKLOAD))
    return int(master.post("/api/v1/experiments", body)["experiment"]["id"])


def run(
    workdir: Path,
    *,
    notices: int = 5,
    size_mib: int = 1024,
    step_s: float = 0.5,
    ckpt_every: int = 10,
    tick_s: float = 5.0,
    poll_s: float = 5.0,
    seed: int = 0,
    say: Callable[[str], None] = print,
) -> SpotNoticeResult:
    """Bring everything up, take `notices` samples, tear everything down."""
    result = SpotNoticeResult(notices, size_mib, step_s, ckpt_every, tick_s, poll_s)
    result.load_before = round(os.getloadavg()[0], 2)
    rng = random.Random(seed)
    with pytest.MonkeyPatch.context() as env:
        moto = fresh_moto(env)  # fake AWS settings in os.environ: the master inherits them
        config = master_config(aws_provider(moto, max_idle_agent_period="5s"), interval_s=tick_s)
        say(f"  master + moto; {notices} notices, {size_mib} MiB checkpoints …")
        runner = InstanceRunner(
            moto_view(moto),
            workdir / "vms",
            agent_args=("--interruption-poll-interval", str(poll_s)),
            interval_s=0.1,
        )
        with _deployment(workdir, config) as master, runner:
            _measure(master, moto, runner, result, rng, say)
    result.load_after = round(os.getloadavg()[0], 2)
    return result


def _measure(
    master: Master,
    moto: MotoEc2,
    runner: InstanceRunner,
    result: SpotNoticeResult,
    rng: random.Random,
    say: Callable[[str], None],
) -> None:
    config = _experiment(result.notices, result.size_mib, result.step_s, result.ckpt_every)
    submitted = time.time()
    exp_id = _submit(master, config)
    first_launch = wait_until(lambda: master.launches_after(submitted), 60, "launch decision")
    result.first_reaction_s = first_launch[0] - submitted
    trials = wait_until(
        lambda: master.get(f"/api/v1/experiments/{exp_id}/trials")["trials"], 60, "a trial"
    )
    trial_id = int(trials[0]["id"])
    for n in range(result.notices):
        sample, noticed, ended_at = _one_notice(master, trial_id, runner, result, rng, n)
        result.samples.append(sample)
        say(
            f"  notice {n + 1}/{result.notices} on {sample.instance_id}: checkpoint (step "
            f"{sample.checkpoint_step}) +{sample.to_checkpoint_s:.2f} s, released "
            f"+{sample.to_released_s:.2f} s; {sample.since_checkpoint_s:.1f} s at risk"
        )
        moto.client().terminate_instances(InstanceIds=[sample.instance_id])  # AWS takes it back
        launches = wait_until(lambda t=noticed: master.launches_after(t), 60, "a replacement")
        result.replacement_reactions_s.append(launches[0] - ended_at)
        _prune_checkpoints(master, trial_id, master.data_dir)
    result.checkpoint_period_s = _periodic_gap(master.checkpoints(trial_id), result.ckpt_every)
    master.post(f"/api/v1/experiments/{exp_id}/kill", None)


def _one_notice(
    master: Master,
    trial_id: int,
    runner: InstanceRunner,
    result: SpotNoticeResult,
    rng: random.Random,
    n: int,
) -> tuple[NoticeSample, float, float]:
    """Notice the instance the trial trains on; returns the sample, the notice's time and the
    allocation's end (the master's stamp: from then on the trial is unmet demand again)."""
    allocation, instance = wait_until(
        lambda: next(iter(master.live().items()), None), 120, "the trial placed on an instance"
    )
    before = len(master.steps(trial_id))
    wait_until(lambda: len(master.steps(trial_id)) > before, 120, "a training step")
    # Somewhere in a checkpoint period, so the time since the last checkpoint varies.
    time.sleep(rng.uniform(0.2, 1.0) * result.ckpt_every * result.step_s)
    committed = master.checkpoints(trial_id)
    at_risk = max(master.steps(trial_id)) - max(map(_step, committed), default=0)
    noticed = time.time()
    runner.notice(instance)

    # Safe: the allocation has ended and the checkpoint the trial will resume from (the newest
    # one once it has ended) is visible. Every checkpoint's first sighting is noted, as a
    # periodic one may still complete after the notice.
    seen = {c["uuid"]: noticed for c in committed}
    newest: dict[str, Any] | None = None
    released_at: float | None = None
    while released_at is None or newest is None or newest["uuid"] not in seen:
        if time.time() > noticed + 180:
            raise TimeoutError(f"notice {n + 1}: not safe within 180 s")
        for c in master.checkpoints(trial_id):
            seen.setdefault(c["uuid"], time.time())
        if released_at is None and allocation not in master.live():
            released_at = time.time()
            latest = master.checkpoints(trial_id)
            newest = max(latest, key=_step, default=None)
        time.sleep(POLL_S)
    checkpoint, checkpoint_at = newest, seen[newest["uuid"]]
    ended_at = _allocation_end(master, trial_id, allocation) or released_at

    assert checkpoint is not None
    step = _step(checkpoint)
    reported = max(master.steps(trial_id))  # the stopped run's reports are all in by now
    sample = NoticeSample(
        instance_id=instance,
        to_checkpoint_s=checkpoint_at - noticed,
        to_released_s=released_at - noticed,
        checkpoint_step=step,
        last_step=reported,
        since_checkpoint_s=at_risk * result.step_s,
        lost_s=max(0, reported - step) * result.step_s,
    )
    return sample, noticed, ended_at


def _allocation_end(master: Master, trial_id: int, allocation_id: str) -> float | None:
    """When the master ended the allocation (its endTime), if it says."""
    task_id = master.get(f"/api/v1/trials/{trial_id}")["trial"]["taskId"]
    allocations = master.get(f"/api/v1/tasks/{task_id}")["task"]["allocations"]
    ends = [a["endTime"] for a in allocations if a["allocationId"] == allocation_id]
    return _ts(ends[0]) if ends and ends[0] else None


def _step(checkpoint: dict[str, Any]) -> int:
    return int(checkpoint["metadata"]["steps_completed"])


def _periodic_gap(checkpoints: list[dict[str, Any]], every: int) -> float | None:
    """Median time between two periodic checkpoints of the same run (steps `every` apart)."""
    by_step = sorted(
        (int(c["metadata"]["steps_completed"]), _ts(c["reportTime"])) for c in checkpoints
    )
    gaps = [
        b_at - a_at
        for (a, a_at), (b, b_at) in itertools.pairwise(by_step)
        if a % every == 0 and b - a == every and b_at > a_at
    ]
    return statistics.median(gaps) if gaps else None


def _prune_checkpoints(master: Master, trial_id: int, data_dir: Path) -> None:
    """Delete the files of every checkpoint but the newest (shared_fs under the master's data
    directory), so that many notices need about 2 checkpoints of disk; the API keeps them."""
    for c in master.checkpoints(trial_id)[:-1]:
        for folder in data_dir.glob(f"checkpoints/**/{c['uuid']}"):
            shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print the table and the verdict; returns the number of missed targets."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.spot_notice")
    p.add_argument("--quick", action="store_true", help="5 notices (the default is 10)")
    p.add_argument("--notices", type=int, default=None, help="spot notices to time (10)")
    p.add_argument("--size-mib", type=int, default=1024, help="checkpoint size (1024 MiB)")
    p.add_argument("--step-seconds", type=float, default=0.5, dest="step_s")
    p.add_argument("--ckpt-every", type=int, default=10, help="steps between checkpoints (10)")
    p.add_argument("--tick-seconds", type=float, default=5.0, dest="tick_s",
                   help="provisioner_interval_s (Determined's 5 s)")  # fmt: skip
    p.add_argument("--poll-seconds", type=float, default=5.0, dest="poll_s",
                   help="the agents' metadata poll interval (the agent's default 5 s)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, help="also write the results as JSON here")
    p.add_argument("--keep-workdir", action="store_true", help="keep logs and sandboxes")
    args = p.parse_args(argv)
    notices = args.notices if args.notices is not None else (5 if args.quick else 10)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="resolute-spot-"))
    # As root, the agents start tasks as their owners' Unix users, who must pass through here
    # (mkdtemp makes it 0700).
    workdir.chmod(0o711)
    try:
        result = run(
            workdir, notices=notices, size_mib=args.size_mib, step_s=args.step_s,
            ckpt_every=args.ckpt_every, tick_s=args.tick_s, poll_s=args.poll_s, seed=args.seed,
            say=say,
        )  # fmt: skip
    finally:
        if args.keep_workdir:
            say(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print_table(result.table())
    misses = result.misses()
    print()
    print("Targets: all met." if not misses else "Targets missed:\n  " + "\n  ".join(misses))
    if args.json:
        args.json.write_text(json.dumps(result.as_json(), indent=2))
    return len(misses)


if __name__ == "__main__":
    sys.exit(main())
