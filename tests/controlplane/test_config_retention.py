"""Master keys of the periodic jobs: retention_policy and checkpoint_gc_interval_s."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from controlplane.config import MasterSettings


def test_defaults_keep_logs_forever(tmp_path: Path) -> None:
    s = MasterSettings(data_dir=tmp_path)
    assert s.retention_policy.log_retention_days is None
    assert s.retention_policy.schedule == "0 0 * * *"
    assert s.checkpoint_gc_interval_s == 30


def test_yaml_keys(tmp_path: Path) -> None:
    cfg = tmp_path / "master.yaml"
    cfg.write_text(
        "checkpoint_gc_interval_s: 2\nretention_policy:\n  log_retention_days: 7\n"
        "  schedule: '30 2 * * 1'\n"
    )
    s = MasterSettings(config_file=cfg, data_dir=tmp_path)
    assert (s.retention_policy.log_retention_days, s.retention_policy.schedule) == (7, "30 2 * * 1")
    assert s.checkpoint_gc_interval_s == 2


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"schedule": "every day"}, "is not a cron expression of five fields"),
        ({"schedule": "0 25 * * *"}, "is not a cron expression of five fields"),
        ({"log_retention_days": -2}, "greater than or equal to -1"),
        ({"log_retention_days": "a week"}, "valid integer"),
        ({"keep": 3}, "Extra inputs are not permitted"),
    ],
)
def test_bad_retention_policy_is_named(
    tmp_path: Path, policy: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message) as info:
        MasterSettings(data_dir=tmp_path, retention_policy=policy)
    assert "retention_policy" in str(info.value)


@pytest.mark.parametrize("interval", [0, -1, 86401])
def test_gc_interval_bounds(tmp_path: Path, interval: float) -> None:
    with pytest.raises(ValidationError, match="checkpoint_gc_interval_s"):
        MasterSettings(data_dir=tmp_path, checkpoint_gc_interval_s=interval)
