"""Unit tests for cli.yaml_config: config files and `--config key=value` overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.errors import CliError
from cli.yaml_config import apply_overrides, dump_yaml, load_mapping, parse_override


class TestParseOverride:
    @pytest.mark.parametrize(
        ("spec", "keys", "value"),
        [
            ("resources.slots_per_trial=2", ["resources", "slots_per_trial"], 2),
            ("name=my exp", ["name"], "my exp"),
            ("hyperparameters.lr=0.01", ["hyperparameters", "lr"], 0.01),
            ("debug=true", ["debug"], True),
            ("labels=[a, b]", ["labels"], ["a", "b"]),
            (
                "searcher={name: single, metric: loss}",
                ["searcher"],
                {"name": "single", "metric": "loss"},
            ),
            ("description=a=b", ["description"], "a=b"),
            ("max_restarts=", ["max_restarts"], None),
            ("version='1.0'", ["version"], "1.0"),
        ],
    )
    def test_valid(self, spec: str, keys: list[str], value: object) -> None:
        assert parse_override(spec) == (keys, value)

    @pytest.mark.parametrize("spec", ["novalue", "=3", "a..b=1", ".a=1", "a.=1"])
    def test_invalid_key(self, spec: str) -> None:
        with pytest.raises(CliError, match="expected KEY"):
            parse_override(spec)

    def test_invalid_yaml_value(self) -> None:
        with pytest.raises(CliError, match="invalid YAML"):
            parse_override("labels=[a, b")


class TestApplyOverrides:
    def test_sets_nested_and_creates_missing(self) -> None:
        config = {"resources": {"slots_per_trial": 1}, "name": "x"}
        apply_overrides(config, ["resources.slots_per_trial=4", "hyperparameters.lr.type=const"])
        assert config == {
            "resources": {"slots_per_trial": 4},
            "name": "x",
            "hyperparameters": {"lr": {"type": "const"}},
        }

    def test_refuses_to_descend_into_a_scalar(self) -> None:
        with pytest.raises(CliError, match="name is not a mapping"):
            apply_overrides({"name": "x"}, ["name.first=y"])

    def test_dump_keeps_key_order(self) -> None:
        text = dump_yaml({"name": "x", "entrypoint": "python3 train.py", "a": {"z": 1, "b": 2}})
        assert text == "name: x\nentrypoint: python3 train.py\na:\n  z: 1\n  b: 2\n"


class TestLoadMapping:
    def test_returns_raw_text_and_mapping(self, tmp_path: Path) -> None:
        path = tmp_path / "c.yaml"
        path.write_text("# comment\nname: x\n")
        assert load_mapping(path, "experiment config") == ("# comment\nname: x\n", {"name": "x"})

    def test_syntax_error_names_file_and_line(self, tmp_path: Path) -> None:
        path = tmp_path / "bad.yaml"
        path.write_text("name: x\nsearcher: [unclosed\n")
        with pytest.raises(CliError, match=r"invalid YAML in .*bad.yaml \(line \d+"):
            load_mapping(path, "experiment config")

    def test_not_a_mapping(self, tmp_path: Path) -> None:
        path = tmp_path / "list.yaml"
        path.write_text("- a\n- b\n")
        with pytest.raises(CliError, match="must be a YAML mapping"):
            load_mapping(path, "experiment config")

    def test_missing_file_and_directory(self, tmp_path: Path) -> None:
        with pytest.raises(CliError, match="does not exist"):
            load_mapping(tmp_path / "nope.yaml", "experiment config")
        with pytest.raises(CliError, match="is a directory"):
            load_mapping(tmp_path, "experiment config")

    def test_empty_file_is_an_empty_mapping(self, tmp_path: Path) -> None:
        path = tmp_path / "empty.yaml"
        path.write_text("")
        assert load_mapping(path, "template file") == ("", {})
