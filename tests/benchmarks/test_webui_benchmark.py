"""benchmarks/run.py reaches the web UI benchmark: `--only webui` runs it whole, the full run adds
its list API when --max-minutes leaves room."""

from __future__ import annotations

import time

import pytest

from benchmarks import run, webui


def test_only_webui_runs_the_whole_benchmark(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(webui, "main", lambda argv: calls.append(argv) or 1)
    assert run.main(["--only", "webui", "--quick", "--fail-on-miss"]) == 1
    assert run.main(["--only", "webui"]) == 0
    assert calls == [["--quick"], []]


def test_the_full_run_adds_the_list_api_when_time_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(webui, "main", lambda argv: calls.append(argv) or 2)
    args = run.parse_args(["--max-minutes", "20"])
    assert run.run_webui_list(args, started=time.perf_counter()) == [
        "web UI list API: 2 target(s) missed"
    ]
    assert calls == [["--list-only", "--requests", "100"]]
    late = time.perf_counter() - 20 * 60 + run.WEBUI_LIST_S / 2
    assert run.run_webui_list(args, started=late) == []
    assert len(calls) == 1
