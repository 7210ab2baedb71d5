"""The real `det` 0.38.1 against our master for RP-workspace bindings: `det rp bindings
add/list-workspaces/replace/remove`, `det workspace list-pools` and `det workspace create/edit
--default-compute-pool` (wire §6 L1). The master runs with a second pool, `gpu`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.conftest import PASSWORD, RunningMaster, master_process
from tests.compat.test_determined_cli import Det

pytestmark = [pytest.mark.compat, pytest.mark.slow]

POOLS = '[{"pool_name": "default"}, {"pool_name": "gpu"}]'


@pytest.fixture(scope="module")
def pools_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningMaster]:
    with master_process(tmp_path_factory, {"DET_RESOURCE_POOLS": POOLS}) as master:
        yield master


@pytest.fixture(scope="module")
def det(
    det_bin: Path, pools_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory
) -> Det:
    return Det(det_bin, pools_master, tmp_path_factory.mktemp("detcfg"))


def admin(det: Det, *args: str, ok: bool = True) -> tuple[int, str]:
    return det(*args, ok=ok, DET_USER="admin", DET_PASS=PASSWORD)


def user(det: Det, *args: str, ok: bool = True) -> tuple[int, str]:
    return det(*args, ok=ok, DET_USER="determined", DET_PASS=PASSWORD)


def _pools_row(out: str) -> list[str]:
    rows = [[c.strip() for c in line.split("|")] for line in out.splitlines() if " | " in line]
    return rows[-1]


def test_bindings_with_the_real_client(det: Det) -> None:
    user(det, "workspace", "create", "team-a")
    user(det, "workspace", "create", "team-b")
    _, out = admin(det, "rp", "bindings", "add", "gpu", "team-a", "team-b")
    assert "added bindings" in out
    _, out = user(det, "rp", "bindings", "list-workspaces", "gpu")
    assert _pools_row(out) == ["gpu", "team-a, team-b"]
    _, out = user(det, "workspace", "list-pools", "team-a")
    assert _pools_row(out) == ["team-a", "default, gpu"]
    _, out = user(det, "workspace", "list-pools", "Uncategorized")
    assert _pools_row(out) == ["Uncategorized", "default"]

    # A user may not bind; binding twice or an unknown pool fails with the master's message.
    code, out = user(det, "rp", "bindings", "add", "gpu", "team-a", ok=False)
    assert code != 0 and "admin" in out
    code, out = admin(det, "rp", "bindings", "add", "gpu", "team-a", ok=False)
    assert code != 0 and "already bound" in out
    code, out = admin(det, "rp", "bindings", "add", "nope", "team-a", ok=False)
    assert code != 0 and "does not exist" in out

    admin(det, "rp", "bindings", "replace", "gpu", "team-b")
    _, out = user(det, "rp", "bindings", "list-workspaces", "gpu")
    assert _pools_row(out) == ["gpu", "team-b"]
    admin(det, "rp", "bindings", "remove", "gpu", "team-b")
    _, out = user(det, "rp", "bindings", "list-workspaces", "gpu")
    assert out.strip().splitlines()[-1].split("|")[0].strip() == "gpu" and "team" not in out


def test_workspace_default_pools_with_the_real_client(det: Det) -> None:
    admin(det, "rp", "bindings", "add", "gpu", "Uncategorized")
    # The pool is bound to another workspace: not a default this one may have.
    code, out = user(
        det, "workspace", "create", "team-c", "--default-compute-pool", "gpu", ok=False
    )
    assert code != 0 and "not bound to workspace 'team-c'" in out
    _, out = user(det, "workspace", "create", "team-c", "--default-compute-pool", "default")
    assert "default" in out
    admin(det, "rp", "bindings", "add", "gpu", "team-c")
    _, out = user(det, "workspace", "edit", "team-c", "--default-compute-pool", "gpu")
    _, out = user(det, "workspace", "describe", "team-c", "--json")
    assert '"defaultComputePool": "gpu"' in out
    admin(det, "rp", "bindings", "remove", "gpu", "Uncategorized", "team-c")
