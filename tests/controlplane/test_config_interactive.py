"""The master's interactive-task settings: defaults as Determined's, bad values refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from controlplane.config import MasterSettings


def test_defaults(tmp_path: Path) -> None:
    s = MasterSettings(data_dir=tmp_path)
    assert s.notebook_timeout is None and s.tensorboard_timeout == 300
    assert s.interactive_idle_check_s == 5.0


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("notebook_timeout", 0), ("notebook_timeout", "soon"), ("tensorboard_timeout", -1),
        ("tensorboard_timeout", 10**9), ("interactive_idle_check_s", 0),
    ],
)  # fmt: skip
def test_bad_values_name_the_key(tmp_path: Path, key: str, value: object) -> None:
    with pytest.raises(ValidationError, match=key):
        MasterSettings(data_dir=tmp_path, **{key: value})


def test_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DET_TENSORBOARD_TIMEOUT", "60")
    monkeypatch.setenv("DET_NOTEBOOK_TIMEOUT", "1800")
    s = MasterSettings(data_dir=tmp_path)
    assert (s.tensorboard_timeout, s.notebook_timeout) == (60, 1800)


def test_the_proxy_front_protocol_is_on_unless_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert MasterSettings(data_dir=tmp_path).http.proxy_front is True
    monkeypatch.setenv("DET_HTTP_PROXY_FRONT", "false")
    assert MasterSettings(data_dir=tmp_path).http.proxy_front is False
    monkeypatch.setenv("DET_HTTP_PROXY_FRONT", "maybe")
    with pytest.raises(ValidationError, match="proxy_front"):
        MasterSettings(data_dir=tmp_path)
