"""The real `det` 0.38.1 and ours against a master with `security.authz.type: rbac`:
`det user-group …`, `det rbac …` (the real client needs `rbacEnabled` from an unauthenticated
GET /api/v1/master), `det master audit`, and a role that really grants access."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.compat.conftest import PASSWORD, RunningMaster, master_process
from tests.compat.test_determined_cli import Det

pytestmark = [pytest.mark.compat, pytest.mark.slow]


@pytest.fixture(scope="module")
def rbac_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningMaster]:
    with master_process(tmp_path_factory, {"DET_SECURITY_AUTHZ": '{"type": "rbac"}'}) as master:
        yield master


@pytest.fixture(scope="module")
def det(det_bin: Path, rbac_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory) -> Det:
    return Det(det_bin, rbac_master, tmp_path_factory.mktemp("detcfg"))


def admin(det: Det, *args: str, ok: bool = True) -> tuple[int, str]:
    return det(*args, ok=ok, DET_USER="admin", DET_PASS=PASSWORD)


def ours(master: RunningMaster, *args: str, user: str = "admin") -> str:
    env = {"DET_MASTER": master.url, "DET_USER": user, "DET_PASS": PASSWORD}
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_groups_and_roles_with_the_real_client(det: Det, rbac_master: RunningMaster) -> None:
    for name in ("mle-0", "mle-1"):
        admin(det, "user", "create", name, "--password", PASSWORD)
    admin(det, "workspace", "create", "Traffic Lights")
    _, out = admin(det, "user-group", "create", "Traffic Team", "--add-user", "mle-0")
    assert "created" in out and "mle-0 was added" in out
    _, out = admin(det, "user-group", "add-user", "Traffic Team", "mle-1")
    assert "user added to group with username mle-1" in out
    _, out = admin(det, "user-group", "describe", "Traffic Team")
    assert "mle-0" in out and "mle-1" in out
    _, out = admin(det, "user-group", "list")
    assert "Traffic Team" in out

    # Before a role: mle-1 sees no experiments list at all.
    code, out = det("experiment", "list", ok=False, DET_USER="mle-1", DET_PASS=PASSWORD)
    assert code != 0 and "PERMISSION_TYPE_VIEW_EXPERIMENT_METADATA" in out

    _, out = admin(det, "rbac", "list-roles")
    for role in ("ClusterAdmin", "WorkspaceAdmin", "WorkspaceCreator", "Viewer", "Editor"):
        assert f"role '{role}'" in out
    _, out = admin(det, "rbac", "list-roles", "--exclude-global-roles")
    assert "ClusterAdmin" not in out and "'Editor'" in out
    _, out = admin(
        det, "rbac", "assign-role", "Editor", "-g", "Traffic Team", "-w", "Traffic Lights"
    )
    assert "assigned role 'Editor'" in out and "to workspace Traffic Lights" in out
    _, out = admin(det, "rbac", "describe-role", "Editor")
    assert "role is assigned to groups" in out and "Traffic Team" in out
    _, out = admin(det, "rbac", "list-groups-roles", "Traffic Team")
    assert "Editor" in out
    _, out = admin(det, "rbac", "list-users-roles", "mle-1")
    assert "Editor" in out and "Traffic Lights" in out
    _, out = det("rbac", "my-permissions", DET_USER="mle-1", DET_PASS=PASSWORD)
    assert "Traffic Lights" in out and "PERMISSION_TYPE_CREATE_EXPERIMENT" in out
    # The role now grants what it says.
    det("experiment", "list", DET_USER="mle-1", DET_PASS=PASSWORD)

    _, out = admin(
        det, "rbac", "unassign-role", "Editor", "-g", "Traffic Team", "-w", "Traffic Lights"
    )
    assert "removed role 'Editor'" in out
    _, out = admin(det, "user-group", "remove-user", "Traffic Team", "mle-1")
    assert "removed from the group" in out
    _, out = admin(det, "user-group", "delete", "Traffic Team", "--yes")
    assert "deleted" in out
    # Our CLI reads the audit log of all of it.
    out = ours(rbac_master, "master", "audit", "--actor", "admin", "--limit", "50")
    assert "POST /api/v1/roles/add-assignments" in out and "DELETE /api/v1/groups" in out


def test_groups_and_roles_with_our_cli(rbac_master: RunningMaster) -> None:
    m = rbac_master
    ours(m, "user", "create", "eve", "--password", PASSWORD)
    ours(m, "workspace", "create", "Stop Signs")
    assert "created" in ours(m, "user-group", "create", "Stop Team", "--add-user", "eve")
    assert "eve" in ours(m, "user-group", "describe", "Stop Team")
    ours(m, "rbac", "assign-role", "Viewer", "-g", "Stop Team", "-w", "Stop Signs")
    assert "Viewer" in ours(m, "rbac", "list-groups-roles", "Stop Team")
    assert "Stop Signs" in ours(m, "rbac", "my-permissions", user="eve")
    assert "Viewer" in ours(m, "rbac", "list-users-roles", "eve")
    assert "EditorRestricted" in ours(m, "rbac", "list-roles")
    assert "assigned to groups" in ours(m, "rbac", "describe-role", "Viewer")
    ours(m, "rbac", "unassign-role", "Viewer", "-g", "Stop Team", "-w", "Stop Signs")
    assert "no permissions assigned" in ours(m, "rbac", "my-permissions", user="eve")
    ours(m, "user-group", "remove-user", "Stop Team", "eve")
    ours(m, "user-group", "delete", "Stop Team", "--yes")
    assert "Stop Team" not in ours(m, "user-group", "list")
