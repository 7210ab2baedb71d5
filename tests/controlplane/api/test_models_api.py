"""The model registry's endpoints (`/api/v1/models…`) on SQLite and PostgreSQL: names that
round-trip exactly, versions from checkpoints, filters and sorting, bad input (4xx with a
message, nothing stored) and who may change what."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

import httpx

from controlplane.db.session import make_engine, make_sessionmaker
from controlplane.services.model_registry import registered_checkpoint_uuids
from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error, new_trial


def path(name: str) -> str:
    # What the Determined bindings do with a name in a path.
    return f"/api/v1/models/{quote(name)}"


async def create(
    m: Master, name: str, headers: dict[str, str] | None = None, **body: Any
) -> dict[str, Any]:
    r = await m.client.post(
        "/api/v1/models", json={"name": name, **body}, headers=headers or m.user
    )
    assert r.status_code == 200, r.text
    return r.json()["model"]


async def checkpoint(m: Master) -> str:
    t = await new_trial(m)
    ckpt = str(uuid.uuid4())
    body = {
        "uuid": ckpt,
        "resources": {"model.pt": 7},
        "metadata": {"steps_completed": 5},
        "training": {"trialId": t["id"]},
    }
    r = await m.client.post("/api/v1/checkpoints", json=body, headers=m.user)
    assert r.status_code == 200, r.text
    return ckpt


async def register(m: Master, name: str, ckpt: str, **body: Any) -> httpx.Response:
    return await m.client.post(
        f"{path(name)}/versions",
        json={"checkpointUuid": ckpt, "modelName": name, **body},
        headers=m.user,
    )


class TestModels:
    async def test_names_round_trip_exactly_by_name_and_by_id(self, master: Master) -> None:
        # "¹" and "٣" are digits to str.isdigit() but names here: only ASCII digits are ids.
        for name in ("m1", "my model", "модель · 模型 ✓", "a.b-c_d (v2)", "\u00b9", "\u0663"):
            made = await create(master, name, description="d", labels=["x"], metadata={"k": 1})
            assert made["name"] == name and made["numVersions"] == 0
            assert made["username"] == "determined" and made["workspaceId"] == 1
            for ref in (path(name), f"/api/v1/models/{made['id']}"):
                r = await master.client.get(ref, headers=master.admin)
                assert r.status_code == 200, r.text
                got = r.json()["model"]
                assert got["name"] == name and got["metadata"] == {"k": 1}
                assert got["labels"] == ["x"] and got["description"] == "d"

    async def test_patch_archive_unarchive_delete(self, master: Master) -> None:
        await create(master, "old name")
        r = await master.client.patch(
            path("old name"),
            json={
                "name": "new name",
                "notes": "# notes",
                "labels": ["a", "b"],
                "metadata": {"x": [1]},
            },
            headers=master.user,
        )
        assert r.status_code == 200, r.text
        got = r.json()["model"]
        assert (got["name"], got["notes"], got["labels"]) == ("new name", "# notes", ["a", "b"])
        assert_error(
            await master.client.get(path("old name"), headers=master.user), 404, "not found"
        )
        for verb, archived in (("archive", True), ("unarchive", False)):
            r = await master.client.post(f"{path('new name')}/{verb}", headers=master.user)
            assert r.status_code == 200, r.text
            r = await master.client.get(path("new name"), headers=master.user)
            assert r.json()["model"]["archived"] is archived
        r = await master.client.delete(path("new name"), headers=master.user)
        assert r.status_code == 200, r.text
        assert_error(await master.client.get(path("new name"), headers=master.user), 404)

    async def test_list_filters_sorts_and_pages(self, master: Master) -> None:
        await create(master, "alpha", labels=["prod", "cv"], description="first")
        await create(master, "beta", labels=["cv"], headers=master.admin)
        await create(master, "gamma")
        await master.client.post(f"{path('gamma')}/archive", headers=master.user)

        async def names(query: str) -> list[str]:
            r = await master.client.get(f"/api/v1/models?{query}", headers=master.user)
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["pagination"]["total"] >= len(body["models"])
            return [m["name"] for m in body["models"]]

        assert await names("sortBy=SORT_BY_NAME&orderBy=ORDER_BY_ASC") == ["alpha", "beta", "gamma"]
        assert await names("sortBy=SORT_BY_NAME&orderBy=ORDER_BY_DESC") == [
            "gamma",
            "beta",
            "alpha",
        ]
        assert await names("archived=false&sortBy=SORT_BY_NAME") == ["alpha", "beta"]
        assert await names("labels=cv&labels=prod") == ["alpha"]
        assert await names("name=ALP") == ["alpha"]
        assert await names("description=fir") == ["alpha"]
        assert await names("users=admin") == ["beta"]
        assert await names("workspaceNames=Uncategorized&sortBy=SORT_BY_NAME&limit=1&offset=1") == [
            "beta"
        ]
        assert await names("workspaceIds=999") == []
        r = await master.client.get("/api/v1/model/labels", headers=master.user)
        assert r.json() == {"labels": ["cv", "prod"]}
        r = await master.client.get("/api/v1/model/labels?workspaceId=999", headers=master.user)
        assert r.json() == {"labels": []}
        r = await master.client.get("/api/v1/models?sortBy=SORT_BY_COLOUR", headers=master.user)
        assert_error(r, 400, "sortBy")


class TestVersions:
    async def test_register_list_get_patch_delete(self, master: Master) -> None:
        name = "reg istered ✓"
        await create(master, name)
        first, second = await checkpoint(master), await checkpoint(master)
        r = await register(master, name, first, comment="c", labels=["l"], metadata={"acc": 0.9})
        assert r.status_code == 200, r.text
        v1 = r.json()["modelVersion"]
        assert v1["version"] == 1 and v1["model"]["name"] == name
        assert v1["checkpoint"]["uuid"] == first and v1["checkpoint"]["metadata"] == {
            "steps_completed": 5
        }
        assert v1["checkpoint"]["training"]["trialId"] is not None
        r = await register(master, name, second)
        assert r.json()["modelVersion"]["version"] == 2
        # What `det model describe` asks for: the latest version.
        r = await master.client.get(
            f"{path(name)}/versions?limit=1&orderBy=ORDER_BY_DESC&sortBy=SORT_BY_VERSION",
            headers=master.user,
        )
        body = r.json()
        assert [v["version"] for v in body["modelVersions"]] == [2]
        assert body["pagination"]["total"] == 2 and body["model"]["numVersions"] == 2
        r = await master.client.patch(
            f"{path(name)}/versions/1",
            json={"name": "v-one", "notes": "n", "comment": "c2", "labels": [], "metadata": {}},
            headers=master.user,
        )
        got = r.json()["modelVersion"]
        assert (got["name"], got["notes"], got["comment"], got["labels"]) == (
            "v-one",
            "n",
            "c2",
            [],
        )
        r = await master.client.get(f"{path(name)}/versions/1", headers=master.admin)
        assert r.json()["modelVersion"]["name"] == "v-one"
        r = await master.client.delete(f"{path(name)}/versions/1", headers=master.user)
        assert r.status_code == 200, r.text
        assert_error(await master.client.get(f"{path(name)}/versions/1", headers=master.user), 404)
        r = await register(master, name, first)
        assert r.json()["modelVersion"]["version"] == 3

    async def test_a_registered_checkpoint_is_held_until_its_version_goes(
        self, master: Master, db_url: str
    ) -> None:
        await create(master, "held")
        ckpt = await checkpoint(master)
        assert (await register(master, "held", ckpt)).status_code == 200

        async def held() -> set[str]:
            engine = make_engine(db_url)  # the app's engine belongs to the app's event loop
            try:
                async with make_sessionmaker(engine)() as session:
                    return await registered_checkpoint_uuids(session)
            finally:
                await engine.dispose()

        assert ckpt in await held()
        await master.client.delete(f"{path('held')}/versions/1", headers=master.user)
        assert ckpt not in await held()
        assert (await register(master, "held", ckpt)).status_code == 200
        await master.client.delete(path("held"), headers=master.user)
        assert ckpt not in await held()


class TestBadInput:
    async def test_bad_names_are_400_and_nothing_is_stored(self, master: Master) -> None:
        for name, why in (
            ("a/b", "slash"),
            ("nul\x00here", "control"),
            ("", "empty"),
            ("   ", "empty"),
            (" padded", "blanks"),
            ("12345", "number"),
            ("x" * 256, "at most 255"),
        ):
            r = await master.client.post("/api/v1/models", json={"name": name}, headers=master.user)
            assert_error(r, 400, why)
        r = await master.client.get("/api/v1/models", headers=master.user)
        assert r.json()["models"] == []

    async def test_oversized_and_mistyped_fields_are_400(self, master: Master) -> None:
        await create(master, "m")
        for body, why in (
            ({"notes": "n" * 70_000}, "notes"),
            ({"description": "d" * 9_000}, "description"),
            ({"metadata": {"blob": "x" * 300_000}}, "metadata"),
            ({"labels": [f"l{i}" for i in range(101)]}, "labels"),
            ({"labels": "not-a-list"}, ""),
            ({"metadata": ["not", "a", "map"]}, ""),
            ({"name": "has/slash"}, "slash"),
        ):
            r = await master.client.patch(path("m"), json=body, headers=master.user)
            assert_error(r, 400, why)
        r = await master.client.get(path("m"), headers=master.user)
        got = r.json()["model"]
        assert (got["notes"], got["labels"], got["metadata"]) == ("", [], {})

    async def test_duplicates_are_409(self, master: Master) -> None:
        await create(master, "dup")
        await create(master, "other")
        r = await master.client.post("/api/v1/models", json={"name": "dup"}, headers=master.admin)
        assert_error(r, 409, "already exists")
        r = await master.client.patch(path("other"), json={"name": "dup"}, headers=master.user)
        assert_error(r, 409, "already exists")

    async def test_unknown_models_versions_checkpoints_and_workspaces(self, master: Master) -> None:
        assert_error(await master.client.get(path("nope"), headers=master.user), 404, "not found")
        assert_error(await master.client.get("/api/v1/models/424242", headers=master.user), 404)
        for digits in ("¹", "٣"):  # digits to str.isdigit(), not ids: names
            r = await master.client.get(path(digits), headers=master.user)
            assert_error(r, 404, "not found")
            r = await master.client.get(f"{path(digits)}/versions/1", headers=master.user)
            assert_error(r, 404, "not found")
        assert_error(await master.client.delete(path("nope"), headers=master.user), 404)
        await create(master, "m")
        assert_error(await master.client.get(f"{path('m')}/versions/7", headers=master.user), 404)
        assert_error(await register(master, "m", str(uuid.uuid4())), 404, "checkpoint")
        assert_error(await register(master, "m", "../../etc/passwd"), 400, "not a UUID")
        assert_error(await register(master, "nope", str(uuid.uuid4())), 404, "model")
        r = await master.client.post(
            "/api/v1/models", json={"name": "w", "workspaceName": "nowhere"}, headers=master.user
        )
        assert_error(r, 404, "workspace")
        r = await master.client.post(
            "/api/v1/models", json={"name": "w", "workspaceId": 999}, headers=master.user
        )
        assert_error(r, 404, "workspace")

    async def test_an_archived_model_takes_no_versions(self, master: Master) -> None:
        await create(master, "frozen")
        await master.client.post(f"{path('frozen')}/archive", headers=master.user)
        assert_error(await register(master, "frozen", await checkpoint(master)), 400, "archived")


class TestWhoMayChange:
    async def test_others_read_but_only_owner_or_admin_change(self, master: Master) -> None:
        await create(master, "admins", headers=master.admin)
        ckpt = await checkpoint(master)
        r = await master.client.post(
            f"{path('admins')}/versions", json={"checkpointUuid": ckpt}, headers=master.admin
        )
        assert r.status_code == 200, r.text
        assert (await master.client.get(path("admins"), headers=master.user)).status_code == 200
        for method, suffix, body in (
            ("PATCH", "", {"description": "mine now"}),
            ("POST", "/archive", None),
            ("DELETE", "", None),
            ("POST", "/versions", {"checkpointUuid": ckpt}),
            ("PATCH", "/versions/1", {"notes": "mine"}),
            ("DELETE", "/versions/1", None),
        ):
            kwargs = {} if body is None else {"json": body}
            r = await master.client.request(
                method, path("admins") + suffix, headers=master.user, **kwargs
            )
            assert_error(r, 403, "owner")
        r = await master.client.get(path("admins"), headers=master.user)
        got = r.json()["model"]
        assert (got["description"], got["archived"], got["numVersions"]) == ("", False, 1)
        await create(master, "users")
        r = await master.client.patch(path("users"), json={"notes": "admin"}, headers=master.admin)
        assert r.status_code == 200, r.text
