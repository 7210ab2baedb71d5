"""``python3 -m harness.launch.torch_distributed [TORCH_OVERRIDES... --] (--trial T | SCRIPT...)``

Determined's ``determined.launch.torch_distributed``: start SCRIPT once per slot through
torch.distributed's own launcher (``python3 -m torch.distributed.run``, the elastic agent, with
its static rendezvous), across every container of the allocation:

- ``--nnodes`` = the allocation's containers, ``--node_rank`` = this container's rank,
  ``--nproc_per_node`` = this container's slots, ``--master_addr`` = the chief container's
  address, ``--master_port`` = C10D_PORT, ``--max_restarts 0``;
- who the containers are comes from the master's rendezvous
  (``GET /api/v1/allocations/{id}/resources/{rid}/rendezvous``, which waits for all of them), or
  from ``rendezvous.json`` in the task's info dir when the master (a trial in one container)
  or prep_container already wrote it;
- every worker runs under ``harness.launch.wrap_rank`` (``[rank=N]`` line prefixes) and gets
  torch's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,
  GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) plus DET_CHIEF_IP and USE_TORCH_DISTRIBUTED, which
  is what ``DistributedContext.from_torch_distributed()`` reads. The script chooses its backend
  (gloo on CPU, NCCL on GPU).

TORCH_OVERRIDES (ended by ``--``) go to torch.distributed.run after ours and win. ``--trial
model_def:Class`` runs a legacy PyTorchTrial (``harness.pytorch._legacy``). Off a cluster it
runs on this machine alone with one process per slot in DET_SLOT_IDS (default 1).

The port: C10D_PORT when set; else a free port when the trial has one container; else
29400 plus a number derived from the allocation id (containers of one allocation agree on it,
and two allocations on the same hosts rarely collide). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from harness import _info
from harness._session import APIError, MasterUnreachable, Session

C10D_PORT = 29400
PORT_SPREAD = 1000
LAUNCH_FAILED = 1
USAGE = "%(prog)s [[TORCH_OVERRIDES...] --] (--trial TRIAL)|(SCRIPT...)"
# The master answers when every container has asked, or after its rendezvous timeout (600 s).
RENDEZVOUS_HTTP_TIMEOUT_S = 660.0


class LaunchError(Exception):
    """The launch cannot go ahead; the message says why."""


@dataclass(frozen=True)
class Layout:
    """Where this container stands among the allocation's containers."""

    addrs: list[str]
    rank: int
    slots: int  # processes to start here

    @property
    def nnodes(self) -> int:
        return len(self.addrs)

    @property
    def chief(self) -> str:
        return "127.0.0.1" if self.nnodes == 1 else self.addrs[0]


def parse_args(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """(torch overrides, script), as Determined's launcher splits them."""
    args = list(args)
    overrides: list[str] = []
    if "--" in args:
        split = args.index("--")
        overrides, args = args[:split], args[split + 1 :]
    parser = argparse.ArgumentParser(
        prog="python3 -m harness.launch.torch_distributed",
        usage=USAGE,
        description="Launch a script under torch.distributed on every slot of the trial.",
    )
    parser.add_argument("--trial", help="(deprecated) a legacy model_def:PyTorchTrial class")
    parser.add_argument("script", metavar="SCRIPT...", nargs=argparse.REMAINDER)
    parsed = parser.parse_args(args)
    script = list(parsed.script or [])
    if parsed.trial is not None:
        if script:
            parser.error(f"extra arguments to --trial: {script}")
        script = [sys.executable, "-m", "harness.pytorch._legacy", parsed.trial]
    elif not script:
        parser.error("empty script is not allowed")
    return overrides, script


def slot_count(env: Mapping[str, str]) -> int:
    raw = env.get("DET_SLOT_IDS")
    if not raw:
        return 1
    try:
        ids = json.loads(raw)
    except ValueError:
        raise LaunchError(f"DET_SLOT_IDS={raw!r} is not a JSON list") from None
    if not isinstance(ids, list):
        raise LaunchError(f"DET_SLOT_IDS={raw!r} is not a JSON list")
    return max(len(ids), 1)


def layout_from(info: _info.RendezvousInfo, slots: int) -> Layout:
    addrs, rank, counts = info.container_addrs, info.container_rank, info.container_slot_counts
    if not addrs or not 0 <= rank < len(addrs):
        raise LaunchError(f"bad rendezvous information: rank {rank} of {addrs}")
    if len(set(counts)) > 1:
        raise LaunchError(
            f"the trial's containers have different slot counts {counts}; torch.distributed's "
            "launcher needs the same number of processes on every node"
        )
    return Layout(addrs=list(addrs), rank=rank, slots=counts[rank] if counts else slots)


def ask_master(env: Mapping[str, str], session: Any = None) -> _info.RendezvousInfo:
    """The master's rendezvous; it answers once every container of the allocation has asked."""
    alloc, rid = env["DET_ALLOCATION_ID"], env["DET_RESOURCES_ID"]
    session = session or Session(env["DET_MASTER"], env["DET_SESSION_TOKEN"])
    path = f"/api/v1/allocations/{alloc}/resources/{rid}/rendezvous"
    try:
        body = session.get(path, timeout=RENDEZVOUS_HTTP_TIMEOUT_S)
    except (APIError, MasterUnreachable) as exc:
        raise LaunchError(f"rendezvous with the trial's other containers failed: {exc}") from exc
    got = body["rendezvousInfo"]
    return _info.RendezvousInfo(
        container_addrs=list(got["addresses"]),
        container_rank=int(got.get("rank") or 0),
        container_slot_counts=[int(s) for s in got["slots"]],
    )


def find_layout(env: Mapping[str, str], session: Any = None) -> Layout:
    """From rendezvous.json when present, else from the master (multi-container trials), else
    this machine alone."""
    slots = slot_count(env)
    info_dir = _info.info_dir(env)
    written = _info.RendezvousInfo._from_file(info_dir / "rendezvous.json")
    if written is not None:
        return layout_from(written, slots)
    on_cluster = all(env.get(name) for name in _info.REQUIRED)
    if on_cluster and env.get("DET_TASK_TYPE") == "TRIAL" and env.get("DET_RESOURCES_ID"):
        return layout_from(ask_master(env, session), slots)
    return Layout(addrs=["127.0.0.1"], rank=0, slots=slots)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def choose_port(env: Mapping[str, str], layout: Layout) -> int:
    if env.get("C10D_PORT"):
        try:
            return int(env["C10D_PORT"])
        except ValueError:
            raise LaunchError(f"C10D_PORT={env['C10D_PORT']!r} is not a port number") from None
    if layout.nnodes == 1:
        return free_port()
    alloc = env.get("DET_ALLOCATION_ID", "")
    return C10D_PORT + zlib.crc32(alloc.encode()) % PORT_SPREAD


def launch_argv(
    layout: Layout, port: int, overrides: Sequence[str], script: Sequence[str], python: str
) -> list[str]:
    return [
        python,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        str(layout.nnodes),
        "--nproc_per_node",
        str(layout.slots),
        "--node_rank",
        str(layout.rank),
        "--max_restarts",
        "0",
        "--master_addr",
        layout.chief,
        "--master_port",
        str(port),
        *overrides,
        "--module",
        "harness.launch.wrap_rank",
        "RANK",
        "--",
        *script,
    ]


def worker_env(env: Mapping[str, str], layout: Layout) -> dict[str, str]:
    out = dict(env)
    out["DET_CHIEF_IP"] = layout.chief
    out["USE_TORCH_DISTRIBUTED"] = "True"
    # The workers import harness (wrap_rank, the Core API) from where this process found it.
    here = str(Path(__file__).resolve().parents[2])
    paths = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p]
    if here not in paths:
        out["PYTHONPATH"] = os.pathsep.join([*paths, here])
    return out


def main(args: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    overrides, script = parse_args(args)
    e = dict(os.environ if env is None else env)
    try:
        layout = find_layout(e)
        port = choose_port(e, layout)
    except LaunchError as exc:
        print(f"harness.launch.torch_distributed: {exc}", file=sys.stderr, flush=True)
        return LAUNCH_FAILED
    argv = launch_argv(layout, port, overrides, script, sys.executable)
    print(
        f"harness.launch.torch_distributed: node {layout.rank} of {layout.nnodes}, "
        f"{layout.slots} process(es), chief {layout.chief}:{port}",
        file=sys.stderr,
        flush=True,
    )
    try:
        child = subprocess.Popen(argv, env=worker_env(e, layout))
    except OSError as exc:
        print(f"harness.launch.torch_distributed: cannot start {argv[0]}: {exc}", file=sys.stderr)
        return 127

    def forward(signum: int, _frame: FrameType | None) -> None:
        child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
