"""Command-level tests for commands that change state: create, control, set, templates."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx
import pytest

from tests.cli.fake_master import FakeMaster, error_body, logged_in, ndjson, run_det

CONFIG_TEXT = (
    "# my experiment\nname: l1\nentrypoint: python3 train.py\nresources:\n  slots_per_trial: 1\n"
)


@pytest.fixture
def master() -> FakeMaster:
    fake = FakeMaster({"admin": "secret"})
    logged_in(fake)
    fake.requests.clear()
    fake.add(
        "POST",
        "/api/v1/experiments",
        {"experiment": {"id": 4, "state": "STATE_ACTIVE"}, "config": {}},
    )
    return fake


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "exp.yaml"
    config.write_text(CONFIG_TEXT)
    ctx = tmp_path / "ctx"
    (ctx / "sub").mkdir(parents=True)
    (ctx / "train.py").write_text("print('hi')\n")
    (ctx / "sub" / "d.txt").write_text("d")
    return config, ctx


class TestCreate:
    def test_body_keeps_raw_yaml_text(self, master: FakeMaster, files: tuple[Path, Path]) -> None:
        config, ctx = files
        result = run_det(master, "e", "create", str(config), str(ctx))
        assert result.exit_code == 0, result.output
        assert result.stdout == "Created experiment 4\n"
        (body,) = master.json_bodies("POST", "/api/v1/experiments")
        assert body["config"] == CONFIG_TEXT
        assert body["activate"] is True and body["validateOnly"] is False
        assert body["projectId"] is None and body["template"] is None
        assert [f["path"] for f in body["modelDefinition"]] == ["sub", "train.py", "sub/d.txt"]
        assert base64.b64decode(body["modelDefinition"][1]["content"]) == b"print('hi')\n"

    def test_options_and_overrides(self, master: FakeMaster, files: tuple[Path, Path]) -> None:
        config, _ = files
        args = [
            "--paused",
            "--project-id",
            "3",
            "--template",
            "t1",
            "--config",
            "resources.slots_per_trial=2",
            "--config",
            "name=other",
        ]
        result = run_det(master, "experiment", "create", *args, str(config))
        assert result.exit_code == 0, result.output
        (body,) = master.json_bodies("POST", "/api/v1/experiments")
        assert body["activate"] is False and body["projectId"] == 3 and body["template"] == "t1"
        assert body["modelDefinition"] == []
        assert (
            body["config"]
            == "name: other\nentrypoint: python3 train.py\nresources:\n  slots_per_trial: 2\n"
        )

    def test_bad_yaml_is_one_line(self, master: FakeMaster, tmp_path: Path) -> None:
        bad = tmp_path / "bad.yaml"
        bad.write_text("name: [oops\n")
        result = run_det(master, "e", "create", str(bad))
        assert result.exit_code == 1 and "invalid YAML" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert master.calls("POST", "/api/v1/experiments") == []

    def test_missing_config_and_context(
        self, master: FakeMaster, files: tuple[Path, Path], tmp_path: Path
    ) -> None:
        result = run_det(master, "e", "create", str(tmp_path / "nope.yaml"))
        assert result.exit_code == 1 and "does not exist" in result.stderr
        config, _ = files
        result = run_det(master, "e", "create", str(config), str(config))
        assert result.exit_code == 1 and "must be a directory" in result.stderr

    def test_master_rejects_config(self, master: FakeMaster, files: tuple[Path, Path]) -> None:
        master.add(
            "POST",
            "/api/v1/experiments",
            httpx.Response(400, json=error_body(3, "searcher.metric is required")),
        )
        result = run_det(master, "e", "create", str(files[0]))
        assert result.exit_code == 1
        assert "searcher.metric is required (HTTP 400" in result.stderr

    def test_follow_streams_first_trial_then_reports_state(
        self, master: FakeMaster, files: tuple[Path, Path]
    ) -> None:
        polls = iter([{"trials": []}, {"trials": [{"id": 9}, {"id": 8}]}])
        master.add("GET", "/api/v1/experiments/4/trials", lambda r: next(polls))
        master.add(
            "GET", "/api/v1/trials/8/logs", ndjson({"result": {"id": 1, "message": "epoch 1\n"}})
        )
        master.add(
            "GET", "/api/v1/experiments/4", {"experiment": {"id": 4, "state": "STATE_COMPLETED"}}
        )
        result = run_det(master, "e", "create", "-f", str(files[0]))
        assert result.exit_code == 0, result.output
        assert (
            result.stdout
            == "Created experiment 4\nepoch 1\nExperiment 4 ended in state COMPLETED\n"
        )
        assert master.calls("GET", "/api/v1/trials/8/logs")[0].url.params["follow"] == "true"


class TestControl:
    @pytest.mark.parametrize(
        "verb", ["pause", "activate", "kill", "cancel", "archive", "unarchive"]
    )
    def test_verbs_post_without_body(self, master: FakeMaster, verb: str) -> None:
        master.add("POST", f"/api/v1/experiments/5/{verb}", {})
        result = run_det(master, "e", verb, "5")
        assert result.exit_code == 0, result.output
        (request,) = master.calls("POST", f"/api/v1/experiments/5/{verb}")
        assert request.content == b""

    @pytest.mark.parametrize(
        ("args", "resources"),
        [
            (["priority", "5", "10"], {"priority": 10}),
            (["weight", "5", "2.5"], {"weight": 2.5}),
            (["max-slots", "5", "4"], {"maxSlots": 4}),
        ],
    )
    def test_set(self, master: FakeMaster, args: list[str], resources: dict) -> None:
        master.add("PATCH", "/api/v1/experiments/5", {"experiment": {}})
        assert run_det(master, "e", "set", *args).exit_code == 0
        assert master.json_bodies("PATCH", "/api/v1/experiments/5") == [
            {"id": 5, "resources": resources}
        ]

    def test_set_priority_out_of_range_is_usage_error(self, master: FakeMaster) -> None:
        assert run_det(master, "e", "set", "priority", "5", "0").exit_code == 2


class TestTemplates:
    def test_set_creates_when_missing(self, master: FakeMaster, tmp_path: Path) -> None:
        path = tmp_path / "t.yaml"
        path.write_text("resources:\n  slots_per_trial: 2\n")
        master.add(
            "GET",
            "/api/v1/templates/t1",
            httpx.Response(404, json=error_body(5, "template t1 not found")),
        )
        master.add("POST", "/api/v1/templates/t1", {"template": {}})
        assert run_det(master, "template", "set", "t1", str(path)).exit_code == 0
        assert master.json_bodies("POST", "/api/v1/templates/t1") == [
            {"name": "t1", "config": {"resources": {"slots_per_trial": 2}}, "workspaceId": 0}
        ]

    def test_set_patches_when_present(self, master: FakeMaster, tmp_path: Path) -> None:
        path = tmp_path / "t.yaml"
        path.write_text("resources:\n  slots_per_trial: 2\n")
        master.add(
            "GET",
            "/api/v1/templates/t1",
            {"template": {"name": "t1", "config": {}, "workspaceId": 1}},
        )
        master.add("PATCH", "/api/v1/templates/t1", {"template": {}})
        assert run_det(master, "template", "set", "t1", str(path)).exit_code == 0
        assert master.json_bodies("PATCH", "/api/v1/templates/t1") == [
            {"resources": {"slots_per_trial": 2}}
        ]

    def test_describe_and_remove(self, master: FakeMaster) -> None:
        master.add(
            "GET",
            "/api/v1/templates/t1",
            {"template": {"name": "t1", "config": {"a": 1}, "workspaceId": 1}},
        )
        master.add("DELETE", "/api/v1/templates/t1", {})
        assert run_det(master, "template", "describe", "t1").stdout == "a: 1\n"
        assert run_det(master, "template", "remove", "t1").stdout == "Removed template t1\n"
        result = run_det(master, "template", "describe", "t1", "--json")
        assert json.loads(result.stdout)["template"]["config"] == {"a": 1}
