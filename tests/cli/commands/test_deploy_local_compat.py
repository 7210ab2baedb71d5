"""`det deploy local cluster-up|cluster-down|logs` (cli/commands/deploy_local_compat.py):
Determined 0.38.1's names and flags for our local deployment."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from cli.auth import hash_password
from cli.commands.deploy_local_compat import (
    cluster_dir,
    delete_db,
    follow_files,
    set_initial_password,
)
from cli.deploy import local
from cli.errors import CliError
from cli.main import app


@pytest.mark.parametrize(
    ("name", "expected"),
    [("determined", "resolute"), ("dev", "resolute-dev"), ("a.b", "resolute-a.b")],
)
def test_cluster_dir(tmp_path: Path, name: str, expected: str) -> None:
    assert cluster_dir(name, tmp_path / "resolute") == tmp_path / expected


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "x\x00"])
def test_cluster_dir_refuses_paths(tmp_path: Path, name: str) -> None:
    with pytest.raises(CliError, match="invalid cluster name"):
        cluster_dir(name, tmp_path)


def test_delete_db_and_initial_password(tmp_path: Path) -> None:
    for name in ("resolute.db", "resolute.db-wal", "other.db"):
        (tmp_path / name).write_text("x")
    assert sorted(p.name for p in delete_db(tmp_path)) == ["resolute.db", "resolute.db-wal"]
    assert (tmp_path / "other.db").exists() and delete_db(tmp_path) == []
    fresh = tmp_path / "new"
    set_initial_password(fresh, "Pw-1")
    assert (fresh / local.PASSWORD_FILE).read_text() == "Pw-1\n"
    assert (fresh / local.PASSWORD_FILE).stat().st_mode & 0o077 == 0
    set_initial_password(fresh, "Pw-2")  # an existing cluster keeps its password
    assert (fresh / local.PASSWORD_FILE).read_text() == "Pw-1\n"


def test_follow_files_prints_each_then_what_is_appended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    master, agent = tmp_path / "master.log", tmp_path / "agent-0.log"
    master.write_text("m1\n")
    agent.write_text("a1\n")
    rounds = iter([True, False])

    def more(_: float) -> None:
        master.write_text("m1\nm2\n")

    follow_files([master, agent], keep_going=lambda: next(rounds), sleep=more)
    assert capsys.readouterr().out == "[master] m1\n[agent-0] a1\n[master] m2\n"


def test_logs_and_down_of_a_cluster_that_never_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    runner = CliRunner()
    result = runner.invoke(app, ["deploy", "local", "logs", "--cluster-name", "x"])
    assert result.exit_code == 1 and "no logs" in result.output
    logs = tmp_path / "resolute-x" / local.LOG_DIR
    logs.mkdir(parents=True)
    (logs / "master.log").write_text("hello\n")
    result = runner.invoke(app, ["deploy", "local", "logs", "--cluster-name", "x", "--no-follow"])
    assert result.exit_code == 0 and result.stdout == "[master] hello\n", result.output
    result = runner.invoke(app, ["deploy", "local", "cluster-down", "--cluster-name", "x"])
    assert result.exit_code == 0 and "Nothing to stop" in result.stdout
    result = runner.invoke(app, ["deploy", "local", "cluster-up", "--enterprise-edition"])
    assert result.exit_code == 1 and "no enterprise edition" in result.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_cluster_up_down_with_determineds_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    port = _free_port()
    runner = CliRunner()
    up = ["deploy", "local", "cluster-up", "--agents", "0", "--master-port", str(port)]
    up += ["--db-password", "ignored", "--det-version", "0.38.1"]
    up += ["--cluster-name", "ci", "--initial-user-password", "Ci-Passw0rd-1", "--no-gpu"]
    result = runner.invoke(app, up)
    try:
        assert result.exit_code == 0, result.output
        body = {"username": "admin", "password": hash_password("Ci-Passw0rd-1"), "isHashed": True}
        r = httpx.post(f"http://127.0.0.1:{port}/api/v1/auth/login", json=body, timeout=10)
        assert r.status_code == 200, r.text
        again = runner.invoke(app, [*up[:-3], "--delete-db"])
        assert again.exit_code == 1 and "is running" in again.output
    finally:
        down = runner.invoke(
            app, ["deploy", "local", "cluster-down", "--cluster-name", "ci", "--delete-db"]
        )
    assert down.exit_code == 0, down.output
    assert "Deleted the database of cluster 'ci'" in down.stdout
    data = tmp_path / "resolute-ci"
    assert not (data / "resolute.db").exists() and not (data / local.PASSWORD_FILE).exists()
