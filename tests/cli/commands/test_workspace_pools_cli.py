"""Our `det rp bindings …`, `det workspace list-pools` and `det workspace edit --max-slots`
against a live master with two pools."""

from __future__ import annotations

import json

from tests.cli.commands.conftest import StartMaster, det_for, fails, ok, table_rows

POOLS = [{"pool_name": "default"}, {"pool_name": "gpu"}]


async def test_bindings_and_quotas(start_master: StartMaster) -> None:
    m = await start_master(resource_pools=POOLS)
    det = det_for(m)
    ok(await det("workspace", "create", "team"))
    assert "added bindings" in ok(await det("rp", "bindings", "add", "gpu", "team"))
    listed = json.loads(ok(await det("rp", "bindings", "list-workspaces", "gpu", "--json")))
    assert listed["workspaces"] == ["team"]
    assert table_rows(ok(await det("workspace", "list-pools", "team")))[-1] == [
        "team",
        "default, gpu",
    ]
    pools = json.loads(ok(await det("workspace", "list-pools", "Uncategorized", "--json")))
    assert pools["resourcePools"] == ["default"]
    fails(await det("rp", "bindings", "add", "default", "team"), "default pool")

    # --max-slots: the workspace's default compute pool, else the cluster's; or --resource-pool.
    ws = json.loads(ok(await det("workspace", "edit", "team", "--max-slots", "8", "--json")))
    assert ws["slotQuotas"] == {"default": 8}
    args = ("workspace", "edit", "team", "--max-slots", "2", "--resource-pool", "gpu", "--json")
    assert json.loads(ok(await det(*args)))["slotQuotas"] == {"default": 8, "gpu": 2}
    ok(await det("workspace", "edit", "team", "--default-compute-pool", "gpu"))
    ws = json.loads(ok(await det("workspace", "edit", "team", "--max-slots", "none", "--json")))
    assert ws["slotQuotas"] == {"default": 8}
    fails(await det("workspace", "edit", "team", "--max-slots", "-1"), ">= 0")
    fails(await det("workspace", "edit", "team", "--max-slots", "many"), "number of slots")
    assert "default=8" in ok(await det("workspace", "describe", "team"))

    ok(await det("rp", "bindings", "replace", "gpu", "Uncategorized"))
    listed = json.loads(ok(await det("rp", "bindings", "list-workspaces", "gpu", "--json")))
    assert listed["workspaces"] == ["Uncategorized"]
    assert "removed bindings" in ok(await det("rp", "bindings", "remove", "gpu", "Uncategorized"))
    listed = json.loads(ok(await det("rp", "bindings", "list-workspaces", "gpu", "--json")))
    assert listed["workspaceIds"] == []
