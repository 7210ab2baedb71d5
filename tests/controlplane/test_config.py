"""Master settings: the resource manager and pools are validated when the master loads them."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from controlplane.config import MasterSettings, load_settings


def test_defaults_give_one_default_pool() -> None:
    s = MasterSettings()
    assert [p.pool_name for p in s.resources.resource_pools] == ["default"]
    assert s.resources.effective_scheduler("default").type == "priority"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"resource_manager": {"scheduler": {"type": "bogus"}}}, "resource_manager.scheduler.type"),
        ({"resource_pools": [{"pool_name": "a"}, {"pool_name": "a"}]}, "a"),
        (
            {"resource_manager": {"default_compute_resource_pool": "gpu"}},
            "default_compute_resource_pool",
        ),
        (
            {"scheduler": {"type": "fair_share"}, "resource_pools": [{"pool_name": "x"}]},
            "scheduler",
        ),
        ({"resource_pools": [{"pool_name": "x", "max_aux_containers_per_agent": -1}]}, "max_aux"),
        ({"scheduling_interval_s": 0}, "scheduling_interval_s"),
    ],
)
def test_bad_resource_config_is_refused_with_its_key(
    settings: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError) as info:
        MasterSettings(**settings)  # type: ignore[arg-type]
    assert message in str(info.value)


def test_pre_014_format_becomes_one_default_pool(tmp_path: Path) -> None:
    path = tmp_path / "master.yaml"
    path.write_text("scheduler:\n  type: fair_share\n")
    s = load_settings(path)
    (pool,) = s.resources.resource_pools
    assert pool.pool_name == "default"
    assert s.resources.effective_scheduler(pool).type == "fair_share"


def test_the_default_checkpoint_folders_are_every_task_users(tmp_path: Path) -> None:
    """Tasks run as their owners' Unix users: the embedded default storage's host_path and
    storage_path (and the TensorBoard tree the real determined package writes) are made 1777 at
    start-up; a configured storage is left to the operator."""
    import stat

    settings = MasterSettings(data_dir=tmp_path / "d")
    settings.prepare_default_checkpoint_dir("c-1")
    host = tmp_path / "d" / "checkpoints"
    top = host / "determined-checkpoint"
    for folder in (host, top, top / "c-1", top / "c-1" / "tensorboard" / "experiment"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o1777, folder
    mine = tmp_path / "mine"
    MasterSettings(
        data_dir=tmp_path / "e", checkpoint_storage={"type": "shared_fs", "host_path": str(mine)}
    ).prepare_default_checkpoint_dir()
    assert not mine.exists() and not (tmp_path / "e" / "checkpoints").exists()
