"""Fixtures for the `det` CLI tests: an isolated token store and environment per test."""

from __future__ import annotations

from pathlib import Path

import pytest

CLI_ENV_VARS = (
    "DET_MASTER",
    "DET_MASTER_ADDR",
    "DET_USER",
    "DET_PASS",
    "DET_USER_TOKEN",
    "XDG_CONFIG_HOME",
)


@pytest.fixture(autouse=True)
def det_config_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Point the token store at tmp_path and clear the DET_* variables a developer may have."""
    for var in CLI_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    config_dir = tmp_path / "det-config"
    monkeypatch.setenv("DET_DEBUG_CONFIG_PATH", str(config_dir))
    return config_dir
