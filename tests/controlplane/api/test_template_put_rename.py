"""Determined's PutTemplate (create or replace) and PatchTemplateName (rename): the owner or an
admin changes a template, another user may not, names are checked, a taken name is a 409."""

from __future__ import annotations

from tests.conftest import Master


async def test_put_creates_then_replaces_and_rename_moves_it(master: Master) -> None:
    r = await master.client.put(
        "/api/v1/templates/base", headers=master.user,
        json={"name": "base", "config": {"description": "one"}},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    r = await master.client.put(
        "/api/v1/templates/base", headers=master.user, json={"config": {"description": "two"}}
    )
    assert r.status_code == 200 and r.json()["template"]["config"] == {"description": "two"}
    r = await master.client.put(
        "/api/v1/templates/base", headers=master.admin, json={"config": {"description": "adm"}}
    )
    assert r.status_code == 200  # an admin may change anyone's
    r = await master.client.patch(
        "/api/v1/template/rename", headers=master.user, json={"oldName": "base", "newName": "v2"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["template"]["name"] == "v2"
    assert (
        await master.client.get("/api/v1/templates/base", headers=master.user)
    ).status_code == 404
    r = await master.client.get("/api/v1/templates/v2", headers=master.user)
    assert r.json()["template"]["config"] == {"description": "adm"}


async def test_others_and_bad_input(master: Master) -> None:
    r = await master.client.put(
        "/api/v1/templates/mine", headers=master.admin, json={"config": {"a": 1}}
    )
    assert r.status_code == 200
    await master.client.put("/api/v1/templates/taken", headers=master.admin, json={"config": {}})
    r = await master.client.put("/api/v1/templates/mine", headers=master.user, json={"config": {}})
    assert r.status_code == 403
    r = await master.client.patch(
        "/api/v1/template/rename", headers=master.user, json={"oldName": "mine", "newName": "x"}
    )
    assert r.status_code == 403
    for body, status in (
        ({"oldName": "mine", "newName": "taken"}, 409),
        ({"oldName": "mine", "newName": "bad name/.."}, 400),
        ({"oldName": "mine", "newName": "a\x00"}, 400),
        ({"oldName": "nope", "newName": "y"}, 404),
        ({"oldName": "mine"}, 400),
    ):
        r = await master.client.patch("/api/v1/template/rename", headers=master.admin, json=body)
        assert r.status_code == status, (body, r.text)
    for body in ({"config": "not a mapping"}, {"name": "other", "config": {}}, {}):
        r = await master.client.put("/api/v1/templates/mine", headers=master.admin, json=body)
        assert r.status_code == 400, (body, r.text)
    r = await master.client.get("/api/v1/templates/mine", headers=master.admin)
    assert r.json()["template"]["config"] == {"a": 1}
