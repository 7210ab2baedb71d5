"""The launcher as a real process with a real allocation token against a live master.

A fake agent receives the trial's StartContainer; the test runs what a container would run
with that environment and reads the task's logs back through the API.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.live import place_trial, run_launcher, task_env, task_logs
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import StartMaster

pytestmark = pytest.mark.slow

EMIT = b"""\
import sys
print("hello from the context directory")
sys.stderr.write("[rank=1] WARNING: a warning on stderr\\n")
sys.stdout.flush()
sys.stdout.buffer.write(b"binary \\xff\\xfe\\x00 end\\n")
sys.stdout.buffer.write(b"A" * (1 << 20) + b"\\n")
sys.stdout.flush()
print("INFO: last line")
sys.exit(3)
"""

CONFIG = """
name: launcher
entrypoint: python3 emit.py
searcher: {name: single, metric: loss, max_length: 10}
resources: {slots_per_trial: 1}
max_restarts: 0
"""


async def test_logs_reach_the_master(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path
) -> None:
    m = await start_master()
    _, start, _ = await place_trial(m, agents, CONFIG, {"emit.py": EMIT})
    env = task_env(m, start, tmp_path / "work")
    ran = await run_launcher(list(start.spec.argv), env)

    assert ran.returncode == 3, ran.stderr.decode(errors="replace")[-2000:]
    assert (tmp_path / "work" / "emit.py").read_bytes() == EMIT  # the context was unpacked
    assert b"hello from the context directory\n" in ran.stdout  # echoed
    assert b"[rank=1] WARNING: a warning on stderr\n" in ran.stderr

    logs = await task_logs(m, start.spec.task_id)
    by_text = {e["log"]: e for e in logs}
    hello = by_text["hello from the context directory\n"]
    assert hello["stdtype"] == "stdout" and hello["level"] == "LOG_LEVEL_INFO"
    assert hello["allocationId"] == start.spec.allocation_id
    assert hello["containerId"] == start.container.id and hello["agentId"] == "agent-1"
    warning = by_text["a warning on stderr\n"]
    assert warning["stdtype"] == "stderr" and warning["level"] == "LOG_LEVEL_WARNING"
    assert warning["rankId"] == 1
    assert "binary \ufffd\ufffd\ufffd end\n" in by_text  # NUL made safe by the master
    assert by_text["last line\n"]["level"] == "LOG_LEVEL_INFO"
    big = [e["log"] for e in logs if e["log"].startswith("A")]
    assert len(big) == 16 and all(len(piece) <= 64 * 1024 + 1 for piece in big)
    assert "".join(big) == "A" * (1 << 20) + "\n"


async def test_a_legacy_entrypoint_naming_no_trial_class_fails_clearly_in_the_logs(
    start_master: StartMaster, agents: list[FakeAgent], tmp_path: Path
) -> None:
    m = await start_master()
    config = CONFIG.replace("python3 emit.py", "model_def:MyTrial")
    _, start, _ = await place_trial(m, agents, config, {"model_def.py": b""})
    ran = await run_launcher(list(start.spec.argv), task_env(m, start, tmp_path / "w"))
    assert ran.returncode == 1
    logs = await task_logs(m, start.spec.task_id)
    (entry,) = [e for e in logs if "cannot run legacy entrypoint" in e["log"]]
    assert entry["level"] == "LOG_LEVEL_ERROR" and "'MyTrial'" in entry["log"]
    assert not [e for e in logs if "Traceback" in e["log"]]
