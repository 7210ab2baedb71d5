"""benchmarks/quickstart.py's pure parts: the fresh copy holds what a clone would (no .venv, no
build, no data), and the table splits the run at the quick start's step lines."""

from __future__ import annotations

from pathlib import Path

from benchmarks import quickstart


def test_the_copy_is_what_a_clone_would_hold(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    quickstart.fresh_copy(copy, head=False)
    assert (copy / "scripts" / "quickstart.sh").is_file()
    assert (copy / "webui" / "package-lock.json").is_file()
    for ignored in (".venv", ".data", "webui/node_modules", "controlplane/webui_dist"):
        assert not (copy / ignored).exists(), ignored


def test_the_table_splits_the_run_at_the_step_lines() -> None:
    steps = [
        (0, "quick start: …"),
        (62, "setup done"),
        (70, "starting the deployment: …"),
        (77, "submitting examples/hello (one trial, 100 batches)"),
        (95, "Experiment 1 COMPLETED. Master: …"),
    ]
    first = quickstart.Run(wall_s=96.4, cpu_s=50.2, rc=0, steps=steps)
    rows = quickstart.rows_for(first, None, ".venv 1.1G")
    assert rows[0] == ("quick start: fresh clone to COMPLETED", "96 s", "50 CPU s; exit 0", "ok")
    assert [r[1] for r in rows[1:]] == ["62 s", "15 s", "18 s"]
    slow = quickstart.Run(wall_s=121.0, cpu_s=50.0, rc=0, steps=steps)
    assert quickstart.rows_for(slow, None, "")[0][3] == "MISS"
    failed = quickstart.Run(wall_s=30.0, cpu_s=5.0, rc=1, steps=steps[:2])
    assert quickstart.rows_for(failed, None, "")[0][3] == "MISS"
