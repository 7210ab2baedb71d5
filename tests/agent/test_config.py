"""AgentSettings: where each value comes from, and how bad values are reported."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agent import config
from agent.config import (
    ConfigError,
    env_name,
    flag_name,
    leaf_keys,
    load_settings,
    parse_list,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agent.md"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No DET_* from the machine running the tests, and no /etc/determined/agent.yaml."""
    import os

    for name in list(os.environ):
        if name.startswith("DET_"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(config, "DEFAULT_CONFIG_FILE", tmp_path / "absent.yaml")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    return path


class TestPrecedence:
    @pytest.mark.parametrize(
        ("in_file", "in_env", "flag", "expected"),
        [
            (None, None, None, 8080),
            ("9001", None, None, 9001),
            ("9001", "9002", None, 9002),
            ("9001", "9002", 9003, 9003),
            (None, "9002", None, 9002),
            (None, None, 9003, 9003),
            ("9001", None, 9003, 9003),
        ],
    )
    def test_flags_over_env_over_file_over_default(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_file, in_env, flag, expected
    ):
        text = "master_host: m\n" + (f"master_port: {in_file}\n" if in_file else "")
        if in_env:
            monkeypatch.setenv("DET_MASTER_PORT", in_env)
        overrides = {"master_port": flag} if flag else {}
        s = load_settings(write(tmp_path, text), **overrides)
        assert s.master_port == expected

    def test_nested_sections_merge_key_by_key(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ):
        path = write(
            tmp_path,
            "master_host: m\nsecurity:\n  tls:\n    enabled: true\n    master_cert_name: a\n",
        )
        monkeypatch.setenv("DET_SECURITY_TLS_SKIP_VERIFY", "true")
        s = load_settings(path, security={"tls": {"master_cert_name": "b"}})
        assert s.security.tls.enabled is True
        assert s.security.tls.skip_verify is True
        assert s.security.tls.master_cert_name == "b"

    def test_config_file_from_env_and_default_location(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ):
        path = write(tmp_path, "master_host: from-file\n")
        monkeypatch.setenv("DET_CONFIG_FILE", str(path))
        assert load_settings().master_host == "from-file"
        monkeypatch.delenv("DET_CONFIG_FILE")
        monkeypatch.setattr(config, "DEFAULT_CONFIG_FILE", path)
        assert load_settings().master_host == "from-file"

    @pytest.mark.parametrize(
        ("env", "expected"),
        [
            ('["shutdown", "now"]', ["shutdown", "now"]),
            ("shutdown now", ["shutdown", "now"]),
            ("sh -c 'echo lost >> /tmp/x'", ["sh", "-c", "echo lost >> /tmp/x"]),
        ],
    )
    def test_hook_from_env(self, monkeypatch: pytest.MonkeyPatch, env: str, expected: list[str]):
        monkeypatch.setenv("DET_HOOKS_ON_CONNECTION_LOST", env)
        s = load_settings(master_host="m")
        assert s.hooks.on_connection_lost == expected

    def test_defaults(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
        s = load_settings(master_host="m", agent_id="a1")
        assert (s.resource_pool, s.slot_type, s.container_runtime) == ("default", "auto", "auto")
        assert (s.agent_reconnect_attempts, s.agent_reconnect_backoff) == (5, 5.0)
        assert s.artificial_slots == 0
        assert s.hooks.on_connection_lost == []
        assert s.effective_work_dir == tmp_path / "data" / "resolute-agent" / "a1"
        assert (s.task_master_host, s.task_master_port) == ("m", 8080)
        s2 = load_settings(master_host="m", container_master_host="c", container_master_port=81)
        assert (s2.task_master_host, s2.task_master_port) == ("c", 81)

    def test_gpu_is_an_alias_of_cuda(self):
        assert load_settings(master_host="m", slot_type="gpu").slot_type == "cuda"

    def test_determined_only_keys_are_accepted_and_named(self, tmp_path: Path):
        path = write(tmp_path, "master_host: m\napi_enabled: true\nbind_port: 9090\n")
        s = load_settings(path)
        assert s.ignored_keys == ("api_enabled", "bind_port")


class TestErrors:
    @pytest.mark.parametrize(
        ("overrides", "problem"),
        [
            ({}, r"^master_host: Field required$"),
            ({"master_host": "m", "master_port": 0}, r"^master_port: .*greater than or equal to 1"),
            ({"master_host": "m", "master_port": "x"}, r"^master_port: .*valid integer"),
            (
                {"master_host": "m", "slot_type": "rocm"},
                r"^slot_type: rocm slots are not supported",
            ),
            ({"master_host": "m", "slot_type": "tpu"}, r"^slot_type: Input should be 'auto'"),
            ({"master_host": "m", "container_runtime": "podman"}, r"^container_runtime: "),
            ({"master_host": "m", "agent_id": "bad id!"}, r"^agent_id: String should match"),
            ({"master_host": "m", "artificial_slots": -1}, r"^artificial_slots: "),
            ({"master_host": "m", "agent_reconnect_backoff": -1}, r"^agent_reconnect_backoff: "),
            ({"master_host": "m", "hooks": {"on_lost": []}}, r"^hooks\.on_lost: unknown key$"),
            ({"master_host": "m", "colour": "red"}, r"^colour: unknown key$"),
            ({"master_host": "m", "advertise_address": "a b"}, r"^advertise_address: "),
            ({"master_host": "m", "advertise_address": "h/x"}, r"^advertise_address: "),
            ({"master_host": "m", "advertise_address": ""}, r"^advertise_address: "),
        ],
    )
    def test_each_problem_names_its_key(self, overrides: dict[str, Any], problem: str):
        with pytest.raises(ConfigError) as err:
            load_settings(**overrides)
        assert re.search(problem, str(err.value), re.MULTILINE), str(err.value)

    def test_bad_env_value_names_the_key(self, monkeypatch: pytest.MonkeyPatch):
        monkeypatch.setenv("DET_AGENT_RECONNECT_ATTEMPTS", "many")
        with pytest.raises(ConfigError, match=r"^agent_reconnect_attempts: "):
            load_settings(master_host="m")

    def test_bad_list_in_env(self, monkeypatch: pytest.MonkeyPatch):
        monkeypatch.setenv("DET_HOOKS_ON_CONNECTION_LOST", "[1, 2]")
        with pytest.raises(ConfigError, match="DET_HOOKS_ON_CONNECTION_LOST"):
            load_settings(master_host="m")

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            ("master_host: [unclosed\n", "not valid YAML"),
            ("- a\n- b\n", "top level must be a mapping"),
            ("master_host: m\nresource_pool: 3\n", "resource_pool: Input should be a valid string"),
        ],
    )
    def test_bad_files(self, tmp_path: Path, text: str, problem: str):
        with pytest.raises(ConfigError, match=re.escape(problem)):
            load_settings(write(tmp_path, text))

    def test_missing_file(self, tmp_path: Path):
        with pytest.raises(ConfigError, match="No such file"):
            load_settings(tmp_path / "nope.yaml", master_host="m")


class TestNames:
    def test_one_name_per_key_everywhere(self):
        paths = [p for p, _ in leaf_keys()]
        assert ("hooks", "on_connection_lost") in paths
        assert env_name(("hooks", "on_connection_lost")) == "DET_HOOKS_ON_CONNECTION_LOST"
        assert flag_name(("security", "tls", "skip_verify")) == "--security-tls-skip-verify"
        assert len({env_name(p) for p in paths}) == len(paths)

    def test_parse_list_refuses_non_strings(self):
        with pytest.raises(ValueError, match="JSON list of strings"):
            parse_list('["a", 1]')

    def test_every_key_is_documented(self):
        text = DOCS.read_text()
        missing = [
            ".".join(p)
            for p, _ in leaf_keys()
            if f"`{'.'.join(p)}`" not in text or env_name(p) not in text or flag_name(p) not in text
        ]
        assert missing == [], f"docs/agent.md lacks {missing}"


class TestFlags:
    def test_given_flags_nest_like_the_yaml_and_absent_ones_leave_env_alone(
        self, monkeypatch: pytest.MonkeyPatch
    ):
        from agent.__main__ import build_parser, overrides_from

        monkeypatch.setenv("DET_RESOURCE_POOL", "from-env")
        args = build_parser().parse_args(
            [
                "--master-host", "m", "--hooks-on-connection-lost", "shutdown now",
                "--security-tls-enabled", "--no-container-auto-remove-disabled",
            ]
        )  # fmt: skip
        overrides = overrides_from(args)
        assert overrides == {
            "master_host": "m",
            "hooks": {"on_connection_lost": ["shutdown", "now"]},
            "security": {"tls": {"enabled": True}},
            "container_auto_remove_disabled": False,
        }
        s = load_settings(**overrides)
        assert s.resource_pool == "from-env"
        assert s.security.tls.enabled is True
