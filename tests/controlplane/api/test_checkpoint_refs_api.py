"""A checkpoint's uuid and resource paths are checked where they come in (POST and PATCH
/api/v1/checkpoints): a trial registered uuid `../../../../tmp/evil` with resources
`{"../../../etc/passwd": 10}` (200), and storage paths are built from both."""

from __future__ import annotations

import uuid

from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error, new_trial


async def test_a_traversal_in_the_uuid_or_a_resource_path_is_400(master: Master) -> None:
    t = await new_trial(master)
    training = {"trialId": t["id"]}
    evil = {"uuid": "../../../../tmp/evil", "resources": {"../../../etc/passwd": 10}}
    r = await master.client.post(
        "/api/v1/checkpoints", json={**evil, "training": training}, headers=master.user
    )
    assert_error(r, 400, "is not a UUID")
    good = str(uuid.uuid4())
    for path, why in (("../../../etc/passwd", "'..'"), ("/etc/passwd", "absolute")):
        body = {"uuid": good, "resources": {path: 10}, "training": training}
        r = await master.client.post("/api/v1/checkpoints", json=body, headers=master.user)
        assert_error(r, 400, why)
    r = await master.client.get(f"/api/v1/trials/{t['id']}/checkpoints", headers=master.user)
    assert r.json()["checkpoints"] == []


async def test_good_checkpoints_are_kept_and_patches_are_checked_too(master: Master) -> None:
    t = await new_trial(master)
    ckpt = str(uuid.uuid4())
    resources = {"model.pt": 10, "state/": 0, "state/opt.pt": "5"}
    body = {"uuid": ckpt, "resources": resources, "training": {"trialId": t["id"]}}
    r = await master.client.post("/api/v1/checkpoints", json=body, headers=master.user)
    assert r.status_code == 200, r.text
    patch = {"checkpoints": [{"uuid": ckpt, "resources": {"resources": {"../x": 1}}}]}
    r = await master.client.patch("/api/v1/checkpoints", json=patch, headers=master.user)
    assert_error(r, 400, "'..'")
    r = await master.client.get(f"/api/v1/checkpoints/{ckpt}", headers=master.user)
    got = r.json()["checkpoint"]
    assert got["resources"] == {"model.pt": "10", "state/": "0", "state/opt.pt": "5"}
    assert got["state"] == "STATE_COMPLETED"
    patch = {"checkpoints": [{"uuid": ckpt, "resources": {"resources": {"model.pt": 10}}}]}
    r = await master.client.patch("/api/v1/checkpoints", json=patch, headers=master.user)
    assert r.status_code == 200, r.text
