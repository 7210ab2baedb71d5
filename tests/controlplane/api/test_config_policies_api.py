"""Config policies through the API: an admin sets them, users read them; a submission gets the
invariant values and is refused outside the constraints, for experiments and for commands;
`det e set priority` keeps within them; the global policy wins over the workspace's."""

from __future__ import annotations

from tests.conftest import Master
from tests.controlplane.services.scheduling.conftest import experiment_yaml

POLICY = """
invariant_config:
  description: set by policy
constraints:
  resources:
    max_slots: 2
  priority_limit: 10
"""
GLOBAL = "/api/v1/config-policies/global/EXPERIMENT"


async def test_admin_sets_users_read_and_submissions_follow(master: Master) -> None:
    r = await master.client.put(GLOBAL, headers=master.user, json={"configPolicies": POLICY})
    assert r.status_code == 403
    r = await master.client.put(GLOBAL, headers=master.admin, json={"configPolicies": POLICY})
    assert r.status_code == 200, r.text
    assert r.json()["configPolicies"]["constraints"] == {
        "resources": {"max_slots": 2},
        "priority_limit": 10,
    }
    r = await master.client.get(GLOBAL, headers=master.user)
    assert r.json()["configPolicies"]["invariant_config"] == {"description": "set by policy"}

    r = await master.client.post(
        "/api/v1/experiments", headers=master.user,
        json={"config": experiment_yaml("ok", slots=2), "activate": False},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    exp = r.json()["experiment"]
    assert exp["config"]["description"] == "set by policy"
    r = await master.client.post(
        "/api/v1/experiments", headers=master.user,
        json={"config": experiment_yaml("big", slots=4), "activate": False},
    )  # fmt: skip
    assert r.status_code == 400 and "slots_per_trial 4 is above the limit of 2" in r.text
    r = await master.client.patch(
        f"/api/v1/experiments/{exp['id']}", headers=master.user, json={"resources": {"priority": 1}}
    )
    assert r.status_code == 400 and "priority" in r.text, r.text

    r = await master.client.delete(GLOBAL, headers=master.admin)
    assert r.status_code == 200
    r = await master.client.get(GLOBAL, headers=master.user)
    assert r.json().get("configPolicies") is None
    r = await master.client.post(
        "/api/v1/experiments", headers=master.user,
        json={"config": experiment_yaml("big", slots=4), "activate": False},
    )  # fmt: skip
    assert r.status_code == 200, r.text


async def test_workspace_policies_and_commands(master: Master) -> None:
    ws_url = "/api/v1/config-policies/workspaces/1/NTSC"
    r = await master.client.put(
        ws_url, headers=master.admin,
        json={"configPolicies": "constraints: {resources: {max_slots: 1}}"},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    r = await master.client.post(
        "/api/v1/commands", headers=master.user,
        json={"config": {"entrypoint": ["true"], "resources": {"slots": 2}}},
    )  # fmt: skip
    assert r.status_code == 400 and "above the limit of 1" in r.text
    r = await master.client.post(
        "/api/v1/commands", headers=master.user,
        json={"config": {"entrypoint": ["true"], "resources": {"slots": 1}}},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    # the global policy wins where both set the same bound
    r = await master.client.put(
        "/api/v1/config-policies/global/NTSC", headers=master.admin,
        json={"configPolicies": "constraints: {resources: {max_slots: 3}}"},
    )  # fmt: skip
    r = await master.client.post(
        "/api/v1/commands", headers=master.user,
        json={"config": {"entrypoint": ["true"], "resources": {"slots": 2}}},
    )  # fmt: skip
    assert r.status_code == 200, r.text


async def test_bad_input(master: Master) -> None:
    for path, body, status in (
        ("/api/v1/config-policies/global/BOGUS", {"configPolicies": ""}, 400),
        (GLOBAL, {"configPolicies": "constraints: {gpus: 1}"}, 400),
        (GLOBAL, {"configPolicies": "a: ["}, 400),
        (GLOBAL, {"configPolicies": "x" * 70_000}, 400),
        (GLOBAL, {"configPolicies": 5}, 400),
        ("/api/v1/config-policies/workspaces/987654/EXPERIMENT", {"configPolicies": ""}, 404),
        ("/api/v1/config-policies/workspaces/99999999999/EXPERIMENT", {"configPolicies": ""}, 400),
    ):
        r = await master.client.put(path, headers=master.admin, json=body)
        assert r.status_code == status, (path, r.text)
    assert (await master.client.get(GLOBAL)).status_code == 401
