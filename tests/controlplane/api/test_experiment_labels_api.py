"""An experiment's labels (api/experiment_labels.py), with Determined 0.38's shapes: PUT and
DELETE /api/v1/experiments/{id}/labels/{label} answer the labels afterwards; GET
/api/v1/experiment/labels lists the labels in use, most used first. Owner, another user, an
admin, no login and bad input; a task's token is covered for every route by
tests/api/test_task_tokens.py, RBAC by tests/api/test_rbac_routes.py; the real client's
bindings by tests/compat/test_determined_cli_extras.py."""

from __future__ import annotations

from urllib.parse import quote

from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error
from tests.controlplane.api.test_experiment_files_api import experiment, other_user


def _label(exp_id: int, label: str) -> str:
    return f"/api/v1/experiments/{exp_id}/labels/{quote(label, safe='')}"


async def test_put_and_delete_answer_the_labels_and_change_the_experiment(master: Master) -> None:
    exp_id, _ = await experiment(master)
    c = master.client
    r = await c.put(_label(exp_id, "a"), headers=master.user)
    assert r.status_code == 200, r.text
    assert r.json() == {"labels": ["a"]}
    assert (await c.put(_label(exp_id, "b c%"), headers=master.user)).json() == {
        "labels": ["a", "b c%"]
    }
    # Adding a label it has changes nothing; so does removing one it lacks.
    assert (await c.put(_label(exp_id, "a"), headers=master.user)).json() == {
        "labels": ["a", "b c%"]
    }
    assert (await c.delete(_label(exp_id, "zz"), headers=master.user)).json() == {
        "labels": ["a", "b c%"]
    }
    exp = (await c.get(f"/api/v1/experiments/{exp_id}", headers=master.user)).json()
    assert exp["experiment"]["labels"] == ["a", "b c%"]
    assert exp["config"]["labels"] == ["a", "b c%"]
    r = await c.delete(_label(exp_id, "a"), headers=master.admin)  # an admin may too
    assert r.status_code == 200, r.text
    assert r.json() == {"labels": ["b c%"]}
    exp = (await c.get(f"/api/v1/experiments/{exp_id}", headers=master.user)).json()
    assert exp["experiment"]["labels"] == ["b c%"]


async def test_another_user_may_read_but_not_change_them(master: Master) -> None:
    exp_id, _ = await experiment(master)
    await master.client.put(_label(exp_id, "mine"), headers=master.user)
    alice = await other_user(master)
    for call in (master.client.put, master.client.delete):
        assert_error(await call(_label(exp_id, "mine"), headers=alice), 403)
        assert_error(await call(_label(exp_id, "new"), headers=alice), 403)
    r = await master.client.get("/api/v1/experiment/labels", headers=alice)
    assert r.status_code == 200, r.text
    assert r.json() == {"labels": ["mine"]}
    exp = (await master.client.get(f"/api/v1/experiments/{exp_id}", headers=alice)).json()
    assert exp["experiment"]["labels"] == ["mine"]


async def test_labels_in_use_most_used_first_and_by_project(master: Master) -> None:
    c = master.client
    assert (await c.get("/api/v1/experiment/labels", headers=master.user)).json() == {"labels": []}
    ids = [(await experiment(master))[0] for _ in range(3)]
    for exp_id, labels in zip(ids, (["rare", "b"], ["b", "a"], ["a", "b"]), strict=True):
        for label in labels:
            await c.put(_label(exp_id, label), headers=master.user)
    for who in (master.user, master.admin):
        r = await c.get("/api/v1/experiment/labels", headers=who)
        assert r.json() == {"labels": ["b", "a", "rare"]}
    exp = (await c.get(f"/api/v1/experiments/{ids[0]}", headers=master.user)).json()
    project = exp["experiment"]["projectId"]
    r = await c.get("/api/v1/experiment/labels", params={"projectId": project}, headers=master.user)
    assert r.json() == {"labels": ["b", "a", "rare"]}
    r = await c.get("/api/v1/experiment/labels", params={"projectId": 999}, headers=master.user)
    assert r.json() == {"labels": []}


async def test_bad_input(master: Master) -> None:
    exp_id, _ = await experiment(master)
    c = master.client
    assert (await c.put(_label(exp_id, "a"))).status_code == 401
    assert (await c.delete(_label(exp_id, "a"))).status_code == 401
    assert (await c.get("/api/v1/experiment/labels")).status_code == 401
    assert_error(await c.put(_label(999999, "a"), headers=master.user), 404)
    assert_error(await c.delete(_label(999999, "a"), headers=master.user), 404)
    assert (await c.put(_label(2**40, "a"), headers=master.user)).status_code == 400
    assert (await c.put("/api/v1/experiments/x/labels/a", headers=master.user)).status_code in (
        400,
        404,
    )
    assert_error(await c.put(_label(exp_id, "a\x00b"), headers=master.user), 400, "NUL")
    assert_error(await c.put(_label(exp_id, " "), headers=master.user), 400, "empty")
    assert (await c.put(_label(exp_id, "x" * 5000), headers=master.user)).status_code == 400
    for bad in ("x", "-1", str(2**40)):
        r = await c.get("/api/v1/experiment/labels", params={"projectId": bad}, headers=master.user)
        assert r.status_code == 400, r.text
    for i in range(100):
        r = await c.put(_label(exp_id, f"l{i}"), headers=master.user)
        assert r.status_code == 200, r.text
    assert_error(await c.put(_label(exp_id, "one-too-many"), headers=master.user), 400, "at most")
    exp = (await c.get(f"/api/v1/experiments/{exp_id}", headers=master.user)).json()
    assert len(exp["experiment"]["labels"]) == 100
