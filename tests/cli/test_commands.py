"""Command-level tests: `det ...` run in-process against an in-memory fake master."""

from __future__ import annotations

import json

import httpx
import pytest

from cli.auth import TokenStore, auth_file_path, hash_password
from tests.cli.fake_master import (
    MASTER,
    FakeMaster,
    error_body,
    logged_in,
    ndjson,
    paged,
    run_det,
)

EXPERIMENT = {
    "id": 7,
    "name": "mnist",
    "state": "STATE_ACTIVE",
    "username": "admin",
    "archived": False,
    "numTrials": 1,
    "projectId": 1,
    "searcherType": "single",
    "startTime": "2026-01-02T03:04:05.123Z",
    "progress": 0.25,
    "config": {"searcher": {"name": "single", "metric": "loss", "smaller_is_better": True}},
}
TRIAL = {
    "id": 11,
    "experimentId": 7,
    "state": "STATE_COMPLETED",
    "hparams": {"lr": 0.1},
    "restarts": 0,
    "startTime": "2026-01-02T03:04:05Z",
    "totalBatchesProcessed": "100",
}
WORKLOADS = [
    {
        "training": {
            "totalBatches": 50,
            "state": "STATE_COMPLETED",
            "endTime": "2026-01-02T03:05:00Z",
            "metrics": {"avgMetrics": {"loss": 0.9}},
        }
    },
    {
        "validation": {
            "totalBatches": 50,
            "state": "STATE_COMPLETED",
            "endTime": "2026-01-02T03:05:01Z",
            "metrics": {"avgMetrics": {"loss": 0.5}},
        }
    },
    {
        "validation": {
            "totalBatches": 100,
            "state": "STATE_COMPLETED",
            "endTime": "2026-01-02T03:06:01Z",
            "metrics": {"avgMetrics": {"loss": 0.3}},
        }
    },
    {
        "checkpoint": {
            "totalBatches": 100,
            "state": "STATE_COMPLETED",
            "endTime": "2026-01-02T03:06:02Z",
            "uuid": "ck-1",
        }
    },
]


@pytest.fixture
def master() -> FakeMaster:
    fake = FakeMaster({"admin": "secret"})
    logged_in(fake)
    fake.requests.clear()
    return fake


class TestGlobalBehaviour:
    def test_usage_error_exits_2(self, master: FakeMaster) -> None:
        result = run_det(master, "experiment", "describe")
        assert result.exit_code == 2

    def test_not_found_is_one_red_line(self, master: FakeMaster) -> None:
        master.add(
            "GET",
            "/api/v1/experiments/99",
            httpx.Response(404, json=error_body(5, "experiment 99 not found")),
        )
        result = run_det(master, "e", "describe", "99")
        assert result.exit_code == 1
        assert result.stderr.strip() == "experiment 99 not found"
        assert "Traceback" not in result.output and result.stdout == ""

    def test_forbidden_shows_master_message(self, master: FakeMaster) -> None:
        master.add(
            "POST",
            "/api/v1/experiments/3/kill",
            httpx.Response(403, json=error_body(7, "only the owner may kill experiment 3")),
        )
        result = run_det(master, "e", "kill", "3")
        assert (result.exit_code, result.stderr.strip()) == (
            1,
            "only the owner may kill experiment 3",
        )

    def test_no_login_and_fallback_refused(self) -> None:
        fake = FakeMaster({"admin": "secret", "determined": "not-empty"})
        result = run_det(fake, "e", "list")
        assert result.exit_code == 1
        assert result.stderr.strip() == "Unauthenticated: please run 'det user login <username>'"

    def test_unreachable_master(self) -> None:
        def refuse(request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError("Connection refused", request=request)

        fake = FakeMaster()
        fake.handle = refuse  # type: ignore[method-assign]
        result = run_det(fake, "version")
        assert result.exit_code == 1
        assert "cannot reach the master at http://127.0.0.1:8080" in result.stderr

    def test_bad_master_address(self, master: FakeMaster) -> None:
        from typer.testing import CliRunner

        from cli.main import app

        result = CliRunner().invoke(app, ["-m", "http://u:p@127.0.0.1", "e", "list"])
        assert result.exit_code == 1 and "credentials are not allowed" in result.stderr

    def test_version(self, master: FakeMaster) -> None:
        master.routes[("GET", "/info")] = {"version": "0.38.1", "cluster_name": "c"}
        result = run_det(master, "version")
        assert result.exit_code == 0
        assert "version: 0.38.1" in result.stdout and f"master_address: {MASTER}" in result.stdout


class TestUser:
    def test_login_caches_token_and_sets_active(self) -> None:
        fake = FakeMaster({"admin": "secret"})
        result = run_det(fake, "user", "login", "admin", input="secret\n")
        assert result.exit_code == 0, result.output
        store = TokenStore(auth_file_path())
        assert store.get_active_user(MASTER) == "admin"
        assert store.get_token(MASTER, "admin") in fake.tokens
        assert fake.json_bodies("POST", "/api/v1/auth/login") == [
            {"username": "admin", "password": hash_password("secret"), "isHashed": True}
        ]

    def test_wrong_password(self) -> None:
        result = run_det(FakeMaster({"admin": "secret"}), "user", "login", "admin", input="nope\n")
        assert result.exit_code == 1
        assert result.stderr.strip().endswith("login failed for user 'admin': invalid credentials")

    def test_whoami_and_logout(self, master: FakeMaster) -> None:
        assert "logged in as user 'admin'" in run_det(master, "user", "whoami").stdout
        master.add("POST", "/api/v1/auth/logout", {})
        result = run_det(master, "user", "logout")
        assert result.exit_code == 0
        assert master.calls("POST", "/api/v1/auth/logout")[0].content == b""
        assert TokenStore(auth_file_path()).get_token(MASTER, "admin") is None

    def test_create_sends_hashed_password(self, master: FakeMaster) -> None:
        master.add("POST", "/api/v1/users", {"user": {"id": 2, "username": "bob"}})
        assert (
            run_det(master, "user", "create", "bob", "--admin", "--password", "pw").exit_code == 0
        )
        assert master.json_bodies("POST", "/api/v1/users") == [
            {
                "user": {"username": "bob", "admin": True, "active": True},
                "password": hash_password("pw"),
                "isHashed": True,
            }
        ]

    def test_deactivate_finds_the_id(self, master: FakeMaster) -> None:
        users = [{"id": 1, "username": "admin"}, {"id": 5, "username": "bob"}]
        master.add("GET", "/api/v1/users", paged("users", users))
        master.add("PATCH", "/api/v1/users/5", {"user": users[1]})
        assert run_det(master, "user", "deactivate", "bob").exit_code == 0
        assert master.json_bodies("PATCH", "/api/v1/users/5") == [{"active": False}]

    def test_change_password_mismatch(self, master: FakeMaster) -> None:
        result = run_det(master, "user", "change-password", input="one\ntwo\n")
        assert result.exit_code == 1 and "do not match" in result.stderr

    def test_change_own_password(self, master: FakeMaster) -> None:
        master.add("PATCH", "/api/v1/users/1", {})
        result = run_det(master, "user", "change-password", input="secret\nsecret\n")
        assert result.exit_code == 0, result.output
        assert master.json_bodies("PATCH", "/api/v1/users/1") == [
            {"password": hash_password("secret"), "isHashed": True}
        ]


class TestExperimentReads:
    def test_list_json_is_raw(self, master: FakeMaster) -> None:
        master.add("GET", "/api/v1/experiments", paged("experiments", [EXPERIMENT]))
        result = run_det(master, "e", "list", "--json")
        assert json.loads(result.stdout) == {"experiments": [EXPERIMENT]}
        params = master.calls("GET", "/api/v1/experiments")[0].url.params
        assert params.get("archived") == "false" and params.get_list("users") == ["admin"]
        assert (params.get("limit"), params.get("offset")) == ("200", "0")

    def test_list_table_strips_state(self, master: FakeMaster) -> None:
        master.add("GET", "/api/v1/experiments", paged("experiments", [EXPERIMENT]))
        result = run_det(master, "experiment", "list", "--all")
        assert "ACTIVE" in result.stdout and "STATE_ACTIVE" not in result.stdout
        assert "25.0%" in result.stdout and "2026-01-02 03:04:05" in result.stdout
        params = master.calls("GET", "/api/v1/experiments")[0].url.params
        assert "users" not in params and "archived" not in params

    def test_describe_shows_best_validation(self, master: FakeMaster) -> None:
        master.add("GET", "/api/v1/experiments/7", {"experiment": EXPERIMENT})
        master.add("GET", "/api/v1/experiments/7/trials", paged("trials", [TRIAL]))
        master.add("GET", "/api/v1/trials/11/workloads", paged("workloads", WORKLOADS))
        result = run_det(master, "e", "describe", "7")
        assert result.exit_code == 0, result.output
        assert (
            "loss=0.3" in result.stdout and "ck-1" in result.stdout and "COMPLETED" in result.stdout
        )
        assert master.calls("GET", "/api/v1/trials/11/workloads")[0].url.params["limit"] == "500"

    def test_config_prints_yaml(self, master: FakeMaster) -> None:
        master.add("GET", "/api/v1/experiments/7", {"experiment": EXPERIMENT})
        result = run_det(master, "e", "config", "7")
        assert result.stdout.startswith("searcher:\n  name: single\n")

    def test_trial_describe_json(self, master: FakeMaster) -> None:
        master.add("GET", "/api/v1/trials/11", {"trial": TRIAL})
        master.add("GET", "/api/v1/trials/11/workloads", paged("workloads", WORKLOADS))
        result = run_det(master, "t", "describe", "11", "--json")
        assert json.loads(result.stdout) == {"trial": TRIAL, "workloads": WORKLOADS}
        params = master.calls("GET", "/api/v1/trials/11/workloads")[0].url.params
        assert params["includeBatchMetrics"] == "false" and params["limit"] == "1000"

    def test_trial_describe_table(self, master: FakeMaster) -> None:
        master.add("GET", "/api/v1/trials/11", {"trial": TRIAL})
        master.add("GET", "/api/v1/trials/11/workloads", paged("workloads", WORKLOADS))
        out = run_det(master, "trial", "describe", "11").stdout
        assert "VALIDATION" in out and "loss=0.3" in out and "lr=0.1" in out

    def test_checkpoint_describe(self, master: FakeMaster) -> None:
        ckpt = {
            "uuid": "ck-1",
            "state": "STATE_COMPLETED",
            "resources": {"a": "7", "b": "3"},
            "training": {"trialId": 11, "experimentId": 7},
            "metadata": {"steps_completed": 100},
        }
        master.add("GET", "/api/v1/checkpoints/ck-1", {"checkpoint": ckpt})
        out = run_det(master, "checkpoint", "describe", "ck-1").stdout
        assert "2 files, 10 B" in out and "steps_completed=100" in out


class TestLogs:
    LINES = [{"id": i, "message": f"line {i}\n", "trialId": 11} for i in (1, 2, 3)]

    def test_trial_logs(self, master: FakeMaster) -> None:
        master.add("GET", "/api/v1/trials/11/logs", ndjson(*({"result": e} for e in self.LINES)))
        result = run_det(master, "t", "logs", "11")
        assert result.stdout == "line 1\nline 2\nline 3\n"
        assert master.calls("GET", "/api/v1/trials/11/logs")[0].url.params["follow"] == "false"

    def test_tail_asks_newest_first_prints_oldest_first(self, master: FakeMaster) -> None:
        newest = [{"result": e} for e in reversed(self.LINES[1:])]
        master.add("GET", "/api/v1/trials/11/logs", ndjson(*newest))
        result = run_det(master, "t", "logs", "11", "--tail", "2")
        assert result.stdout == "line 2\nline 3\n"
        params = master.calls("GET", "/api/v1/trials/11/logs")[0].url.params
        assert (params["limit"], params["orderBy"]) == ("2", "ORDER_BY_DESC")

    def test_stream_error_line(self, master: FakeMaster) -> None:
        master.add(
            "GET",
            "/api/v1/trials/11/logs",
            ndjson({"result": self.LINES[0]}, {"error": {"message": "boom"}}),
        )
        result = run_det(master, "t", "logs", "11")
        assert result.stdout == "line 1\n" and result.exit_code == 1 and "boom" in result.stderr

    def test_experiment_logs_use_first_trial(self, master: FakeMaster) -> None:
        master.add(
            "GET", "/api/v1/experiments/7/trials", paged("trials", [{**TRIAL, "id": 12}, TRIAL])
        )
        master.add("GET", "/api/v1/trials/11/logs", ndjson({"result": self.LINES[0]}))
        assert run_det(master, "e", "logs", "7", "-f").stdout == "line 1\n"
        assert master.calls("GET", "/api/v1/trials/11/logs")[0].url.params["follow"] == "true"
