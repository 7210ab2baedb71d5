"""Level 1: the real `det` 0.38.1 CLI, unchanged, against our master (reference wire §6 L1)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.compat.conftest import PASSWORD, RunningMaster

pytestmark = [pytest.mark.compat, pytest.mark.slow]

CONFIG = (
    "name: l1\nentrypoint: python3 train.py\n"
    "searcher: {name: single, metric: loss}\nresources: {slots_per_trial: 1}\n"
)


class Det:
    def __init__(self, bin_dir: Path, master: RunningMaster, config_dir: Path):
        self.bin = bin_dir
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("DET_")},
            "DET_MASTER": master.url,
            "DET_DEBUG_CONFIG_PATH": str(config_dir),
        }

    def __call__(self, *args: str, stdin: str | None = None, ok: bool = True, **env: str):
        proc = subprocess.run(
            [str(self.bin / "det"), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env={**self.env, **env},
            timeout=120,
            start_new_session=True,  # no controlling tty: getpass reads stdin
        )
        out = proc.stdout + proc.stderr
        if ok:
            assert proc.returncode == 0, f"det {' '.join(args)} failed:\n{out}"
        return proc.returncode, out


@pytest.fixture(scope="module")
def det(det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory):
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("l1")
    ctx = root / "ctx"
    (ctx / "sub").mkdir(parents=True)
    (ctx / "train.py").write_text('print("hi")\n')
    (ctx / "sub" / "d.txt").write_text("data\n")
    (root / "l1.yaml").write_text(CONFIG)
    (root / "template.yaml").write_text("resources:\n  slots_per_trial: 2\ndescription: from-tpl\n")
    return {"ctx": ctx, "cfg": root / "l1.yaml", "tpl": root / "template.yaml"}


def test_unauthenticated_fallback_is_refused(det: Det) -> None:
    code, out = det("experiment", "list", ok=False)
    assert code != 0 and "Unauthenticated" in out


def test_login_whoami_and_master_info(det: Det) -> None:
    _, out = det("version")
    assert "0.38.1" in out
    det("user", "login", "admin", stdin=PASSWORD + "\n")
    _, out = det("user", "whoami")
    assert "You are logged in as user 'admin'" in out
    _, out = det("master", "info")
    assert "clusterId" in out and "version: 0.38.1" in out


def test_wrong_password_is_refused(det: Det) -> None:
    code, out = det("user", "login", "admin", stdin="wrong\n", ok=False)
    assert code != 0 and "invalid credentials" in out.lower()


def test_experiment_lifecycle(det: Det, files: dict[str, Path]) -> None:
    _, out = det("experiment", "create", str(files["cfg"]), str(files["ctx"]))
    exp_id = re.search(r"Created experiment (\d+)", out).group(1)  # type: ignore[union-attr]
    _, out = det("experiment", "create", "--paused", str(files["cfg"]), str(files["ctx"]))
    paused_id = re.search(r"Created experiment (\d+)", out).group(1)  # type: ignore[union-attr]
    _, out = det("experiment", "list")
    # ACTIVE with nothing placed (no agent here): shown QUEUED, as Determined shows it.
    assert re.search(rf"^\s*{exp_id} \| admin .*QUEUED", out, re.M), out
    assert re.search(rf"^\s*{paused_id} \| admin .*PAUSED", out, re.M), out
    det("experiment", "list", "--all")
    _, out = det("experiment", "describe", exp_id, "--json")
    assert '"originalConfig"' in out
    _, out = det("experiment", "describe", exp_id)
    assert "Trials:" in out and "Workloads:" in out
    _, out = det("experiment", "config", exp_id)
    assert "searcher:" in out and "max_restarts: 5" in out
    det("experiment", "pause", exp_id)
    det("experiment", "activate", exp_id)
    _, out = det("experiment", "set", "priority", exp_id, "10")
    assert "priority" in out
    det("experiment", "set", "weight", exp_id, "2.5")
    _, out = det("experiment", "config", exp_id)
    assert "priority: 10" in out and "weight: 2.5" in out
    det("experiment", "list-trials", exp_id)
    det("experiment", "list-checkpoints", exp_id)
    det("experiment", "logs", exp_id)
    det("experiment", "kill", exp_id)
    _, out = det("experiment", "list", "--all")
    assert re.search(rf"^\s*{exp_id} \| admin .*CANCELED", out, re.M), out


def test_priority_out_of_range_is_a_clear_error(det: Det, files: dict[str, Path]) -> None:
    _, out = det("experiment", "create", "--paused", str(files["cfg"]), str(files["ctx"]))
    exp_id = re.search(r"Created experiment (\d+)", out).group(1)  # type: ignore[union-attr]
    code, out = det("experiment", "set", "priority", exp_id, "500", ok=False)
    assert code != 0 and "between 1 and 99" in out


def test_bad_config_names_the_key_and_line(
    det: Det, tmp_path: Path, files: dict[str, Path]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(CONFIG + "max_restarts: lots\n")
    code, out = det("experiment", "create", str(bad), str(files["ctx"]), ok=False)
    assert code != 0 and "max_restarts" in out and "line 5" in out


def test_templates(det: Det, files: dict[str, Path]) -> None:
    det("template", "set", "t1", str(files["tpl"]))  # 404 → POST
    det("template", "set", "t1", str(files["tpl"]))  # 200 → PATCH
    _, out = det("template", "list")
    assert "t1" in out
    _, out = det("template", "describe", "t1")
    assert "slots_per_trial: 2" in out
    _, out = det("experiment", "create", "--template", "t1", str(files["cfg"]), str(files["ctx"]))
    exp_id = re.search(r"Created experiment (\d+)", out).group(1)  # type: ignore[union-attr]
    _, out = det("experiment", "config", exp_id)
    assert "description: from-tpl" in out  # template filled what the user left unset
    assert "slots_per_trial: 1" in out  # the user's value wins


def test_lenient_configs_as_determined(det: Det, tmp_path: Path, files: dict[str, Path]) -> None:
    """A template with resources.slots (in Determined's expconf schema) is taken at
    `experiment create --template`; a config without a name gets "Experiment (petname)"."""
    tpl = tmp_path / "slots.yaml"
    tpl.write_text("resources:\n  slots: 1\n  resource_pool: ''\n")
    det("template", "set", "with-slots", str(tpl))
    nameless = tmp_path / "nameless.yaml"
    nameless.write_text(CONFIG.replace("name: l1\n", ""))
    _, out = det(
        *("experiment", "create", "--paused", "--template", "with-slots"),
        *(str(nameless), str(files["ctx"])),
    )
    exp_id = re.search(r"Created experiment (\d+)", out).group(1)  # type: ignore[union-attr]
    _, out = det("experiment", "config", exp_id)
    assert re.search(r"^name: Experiment \([a-z]+-[a-z]+-[a-z]+\)$", out, re.M), out
    assert "slots_per_trial: 1" in out
    _, out = det("experiment", "list", "--all")
    assert re.search(rf"\b{exp_id}\b.*Experiment \([a-z]+-[a-z]+-[a-z]+\)", out), out


def test_checkpoint_storage_with_only_gc_keys_uses_the_clusters(
    det: Det, tmp_path: Path, files: dict[str, Path]
) -> None:
    cfg = tmp_path / "gc.yaml"
    cfg.write_text(CONFIG + "checkpoint_storage: {save_trial_best: 2, save_trial_latest: 3}\n")
    _, out = det("experiment", "create", "--paused", str(cfg), str(files["ctx"]))
    exp_id = re.search(r"Created experiment (\d+)", out).group(1)  # type: ignore[union-attr]
    _, out = det("experiment", "config", exp_id)
    assert "type: shared_fs" in out and "storage_path: determined-checkpoint" in out
    assert "save_trial_best: 2" in out and "save_trial_latest: 3" in out


def test_unknown_ids(det: Det) -> None:
    code, out = det("experiment", "describe", "99999", ok=False)
    assert code != 0 and "not found" in out
    code, out = det("checkpoint", "describe", "no-such-uuid", ok=False)
    assert code != 0 and "not found" in out


def test_logout(det: Det) -> None:
    det("user", "logout")
    code, out = det("experiment", "list", ok=False)
    assert code != 0 and "Unauthenticated" in out
