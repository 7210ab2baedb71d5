"""Webhooks over the API on SQLite and PostgreSQL: Determined's shapes (bodies as the 0.38.1
client's bindings send them), who may manage and see which webhook (Determined's
test_webhook_permission), bad input, and delivery to a receiver on 127.0.0.1 through the
outbox: after the transition commits, signed, retried, given up, never blocking the request."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import select

from controlplane.app import create_app
from controlplane.db.models import WebhookDelivery, WebhookEvent
from controlplane.db.session import make_engine, make_sessionmaker
from controlplane.domain import webhooks as wh
from controlplane.services import webhook_outbox
from controlplane.services.webhook_shipper import WebhookShipper
from tests.conftest import PASSWORD, Master, make_settings
from tests.controlplane.api.test_bad_input import assert_error
from tests.support.db_template import migrated
from tests.support.webhook_receiver import receiver

KEY = "webhook-signing-key"
EXP = "name: hooked\nentrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: loss\n"


@dataclass
class Hooked(Master):
    app: Litestar | None = None
    now: list[datetime] | None = None
    db_url: str = ""

    shipper: WebhookShipper = None  # type: ignore[assignment]  # the master's code, on this test's loop

    def advance(self, seconds: float) -> None:
        assert self.now is not None
        self.now[0] += timedelta(seconds=seconds)


@pytest.fixture
async def master(db_url: str, tmp_path: Path) -> AsyncIterator[Hooked]:
    await migrated(db_url)
    now = [datetime(2026, 12, 7, 8, 0, tzinfo=UTC)]
    settings = make_settings(db_url, tmp_path, webhooks={"signing_key": KEY, "sweep_s": 3600})
    app = create_app(settings, clock=lambda: now[0], announce=lambda _: None)
    async with AsyncTestClient(app=app, base_url="http://127.0.0.1") as client:
        # The app runs on the test client's own event loop, whose connections this loop may
        # not use (asyncpg): the test's passes run the same shipper code on an engine of its own.
        engine = make_engine(db_url)
        shipper = WebhookShipper(
            make_sessionmaker(engine), lambda: now[0], signing_key=KEY.encode()
        )
        # The master's own shipper would send at once after each commit: the tests run the
        # passes themselves, so it is unhooked (it then sleeps for its hour-long sweep).
        webhook_outbox.remove_waker(app.state["webhook_shipper"].wake)
        m = Hooked(client=client, admin={}, user={}, app=app, now=now, db_url=db_url)
        m.shipper = shipper
        m.admin = await m.login("admin")
        m.user = await m.login("determined")
        r = await client.post(
            "/api/v1/users",
            json={"user": {"username": "alice", "active": True}, "password": PASSWORD},
            headers=m.admin,
        )
        assert r.status_code == 200, r.text
        try:
            yield m
        finally:
            await shipper.stop()
            await engine.dispose()


def body(url: str, *, state: str = "ACTIVE", **extra: Any) -> dict[str, Any]:
    """A v1Webhook as bindings.post_PostWebhook sends it (to_json(omit_unset=True))."""
    return {
        "url": url,
        "webhookType": "WEBHOOK_TYPE_DEFAULT",
        "triggers": [
            {"triggerType": "TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE", "condition": {"state": state}}
        ],
        "mode": "WEBHOOK_MODE_WORKSPACE",
        "name": "",
        "workspaceId": None,
        **extra,
    }


async def create(m: Master, headers: dict[str, str], payload: dict[str, Any]) -> dict[str, Any]:
    r = await m.client.post("/api/v1/webhooks", json=payload, headers=headers)
    assert r.status_code == 200, r.text
    return dict(r.json()["webhook"])


async def listed(m: Master, headers: dict[str, str]) -> set[int]:
    r = await m.client.get("/api/v1/webhooks", headers=headers)
    assert r.status_code == 200, r.text
    return {w["id"] for w in r.json()["webhooks"]}


async def workspace(m: Master, name: str, headers: dict[str, str]) -> int:
    r = await m.client.post("/api/v1/workspaces", json={"name": name}, headers=headers)
    assert r.status_code == 200, r.text
    return int(r.json()["workspace"]["id"])


async def experiment(m: Master, config: str = EXP, project: int | None = None) -> int:
    payload: dict[str, Any] = {"config": config, "activate": False}
    if project is not None:
        payload["projectId"] = project
    r = await m.client.post("/api/v1/experiments", json=payload, headers=m.user)
    assert r.status_code == 200, r.text
    return int(r.json()["experiment"]["id"])


async def act(m: Master, exp_id: int, verb: str) -> None:
    r = await m.client.post(f"/api/v1/experiments/{exp_id}/{verb}", headers=m.user)
    assert r.status_code == 200, r.text


async def deliveries(m: Hooked) -> list[WebhookDelivery]:
    engine = make_engine(m.db_url)
    try:
        async with make_sessionmaker(engine)() as session:
            return list(await session.scalars(select(WebhookDelivery).order_by(WebhookDelivery.id)))
    finally:
        await engine.dispose()


async def events(m: Hooked) -> list[WebhookEvent]:
    engine = make_engine(m.db_url)
    try:
        async with make_sessionmaker(engine)() as session:
            return list(await session.scalars(select(WebhookEvent)))
    finally:
        await engine.dispose()


class TestShapes:
    async def test_create_list_patch_delete(self, master: Hooked) -> None:
        made = await create(master, master.admin, body("http://127.0.0.1:9/a", state="COMPLETED"))
        assert made["url"] == "http://127.0.0.1:9/a"
        assert made["webhookType"] == "WEBHOOK_TYPE_DEFAULT"
        assert made["mode"] == "WEBHOOK_MODE_WORKSPACE"
        assert made["workspaceId"] is None and made["name"] == ""
        [trigger] = made["triggers"]
        assert trigger["triggerType"] == "TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE"
        assert trigger["condition"] == {"state": "COMPLETED"}
        assert trigger["webhookId"] == made["id"] and trigger["id"] >= 1
        assert await listed(master, master.user) == {made["id"]}

        r = await master.client.patch(
            f"/api/v1/webhooks/{made['id']}",
            json={"url": "http://127.0.0.1:9/b"},
            headers=master.admin,
        )
        assert r.status_code == 200, r.text
        r = await master.client.get("/api/v1/webhooks", headers=master.admin)
        assert r.json()["webhooks"][0]["url"] == "http://127.0.0.1:9/b"

        r = await master.client.delete(f"/api/v1/webhooks/{made['id']}", headers=master.admin)
        assert r.status_code == 200, r.text
        assert await listed(master, master.admin) == set()
        r = await master.client.delete(f"/api/v1/webhooks/{made['id']}", headers=master.admin)
        assert_error(r, 404, "not found")

    async def test_slack_and_custom_triggers(self, master: Hooked) -> None:
        made = await create(
            master,
            master.admin,
            {
                **body("http://127.0.0.1:9/s"),
                "webhookType": "WEBHOOK_TYPE_SLACK",
                "triggers": [{"triggerType": "TRIGGER_TYPE_CUSTOM", "condition": {}}],
            },
        )
        assert made["webhookType"] == "WEBHOOK_TYPE_SLACK"
        assert made["triggers"][0]["triggerType"] == "TRIGGER_TYPE_CUSTOM"


class TestPermissions:
    """Determined's e2e test_webhook_permission, step by step."""

    async def test_global_and_workspace_webhooks(self, master: Hooked) -> None:
        r = await master.client.post(
            "/api/v1/webhooks", json=body("http://h/x"), headers=master.user
        )
        assert_error(r, 403, "admin")
        global_id = (await create(master, master.admin, body("http://h/x")))["id"]
        assert global_id in await listed(master, master.user)

        alice = await master.login("alice")
        ws = await workspace(master, "alices", alice)
        own_id = (await create(master, alice, body("http://h/y", workspaceId=ws)))["id"]
        r = await master.client.post(
            "/api/v1/webhooks", json=body("http://h/z", workspaceId=ws), headers=master.user
        )
        assert_error(r, 403, "owner of workspace")
        assert own_id in await listed(master, alice)
        assert own_id not in await listed(master, master.user)
        assert {own_id, global_id} <= await listed(master, master.admin)

        r = await master.client.delete(f"/api/v1/webhooks/{own_id}", headers=master.user)
        assert_error(r, 403, "owner of workspace")
        for who in (master.user, alice):
            r = await master.client.delete(f"/api/v1/webhooks/{global_id}", headers=who)
            assert_error(r, 403, "admin")
        r = await master.client.delete(f"/api/v1/webhooks/{global_id}", headers=master.admin)
        assert r.status_code == 200
        r = await master.client.delete(f"/api/v1/webhooks/{own_id}", headers=alice)
        assert r.status_code == 200

    async def test_unauthenticated(self, master: Hooked) -> None:
        for method, path in [
            ("GET", "/api/v1/webhooks"),
            ("POST", "/api/v1/webhooks"),
            ("DELETE", "/api/v1/webhooks/1"),
            ("PATCH", "/api/v1/webhooks/1"),
            ("POST", "/api/v1/webhooks/1/test"),
        ]:
            r = await master.client.request(method, path, json=body("http://h/x"))
            assert r.status_code == 401, (method, path, r.text)


class TestBadInput:
    CASES: list[tuple[dict[str, Any], int, str]] = [
        ({"webhookType": "WEBHOOK_TYPE_EMAIL"}, 400, "webhookType"),
        ({"webhookType": "WEBHOOK_TYPE_UNSPECIFIED"}, 400, "webhookType"),
        ({"mode": "WEBHOOK_MODE_ALL"}, 400, "mode"),
        ({"url": "ftp://127.0.0.1/x"}, 400, "http"),
        ({"url": "http://h/\x00"}, 400, "NUL"),
        ({"url": "http://h/" + "a" * 5000}, 400, ""),
        ({"name": "a\x00b"}, 400, "name"),
        ({"name": "n" * 300}, 400, ""),
        ({"triggers": []}, 400, "at least one trigger"),
        (
            {"triggers": [{"triggerType": "TRIGGER_TYPE_TASK_LOG", "condition": {"regex": "x"}}]},
            400,
            "not supported",
        ),
        (
            {"triggers": [{"triggerType": "TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE"}]},
            400,
            "condition.state",
        ),
        ({"triggers": [{"triggerType": "NOPE", "condition": {}}]}, 400, "triggerType"),
        ({"workspaceId": 999999}, 404, "workspace"),
        ({"workspaceId": 2**40}, 400, ""),
        ({"workspaceId": "one"}, 400, ""),
        ({"mode": "WEBHOOK_MODE_SPECIFIC", "name": ""}, 400, "needs a name"),
    ]

    @pytest.mark.parametrize(("change", "status", "needle"), CASES)
    async def test_refused(
        self, master: Hooked, change: dict[str, Any], status: int, needle: str
    ) -> None:
        r = await master.client.post(
            "/api/v1/webhooks", json={**body("http://h/x"), **change}, headers=master.admin
        )
        assert_error(r, status, needle)

    async def test_unknown_and_malformed_ids(self, master: Hooked) -> None:
        for path in ("/api/v1/webhooks/77", "/api/v1/webhooks/77/test"):
            method = "DELETE" if path.endswith("77") else "POST"
            assert_error(await master.client.request(method, path, headers=master.admin), 404)
        for bad in ("abc", str(2**40), "0"):
            r = await master.client.delete(f"/api/v1/webhooks/{bad}", headers=master.admin)
            assert r.status_code in (400, 404), r.text
        r = await master.client.post("/api/v1/webhooks", content=b"{", headers=master.admin)
        assert r.status_code == 400


class TestDelivery:
    async def test_state_change_is_delivered_after_commit_signed(self, master: Hooked) -> None:
        with receiver() as rec:
            hook = await create(master, master.admin, body(rec.url + "/hook", state="ACTIVE"))
            exp_id = await experiment(master)
            await act(master, exp_id, "activate")
            # The request returned with the event queued and nothing sent: no request waits.
            assert rec.got() == [] and len(await events(master)) >= 1
            assert await master.shipper.tick() is None  # sent, and nothing left queued
            [got] = rec.got()
        assert got.path == "/hook"
        payload = got.json()
        assert payload["event_type"] == "EXPERIMENT_STATE_CHANGE"
        assert payload["condition"] == {"state": "ACTIVE"}
        assert payload["event_data"]["experiment"]["id"] == exp_id
        assert payload["event_data"]["experiment"]["name"] == "hooked"
        stamp = got.headers[wh.TIMESTAMP_HEADER]
        want = hmac.new(KEY.encode(), f"{stamp},{got.body}".encode(), hashlib.sha256).hexdigest()
        assert got.headers[wh.SIGNATURE_HEADER] == want
        assert await deliveries(master) == [] and await events(master) == []
        assert hook["id"]

    async def test_failures_are_retried_then_given_up(self, master: Hooked) -> None:
        with receiver([500, 503]) as rec:
            await create(master, master.admin, body(rec.url, state="ACTIVE"))
            exp_id = await experiment(master)
            await act(master, exp_id, "activate")
            due = await master.shipper.tick()
            [pending] = await deliveries(master)
            assert pending.attempts == 1 and not pending.failed and "500" in pending.last_error
            assert due == master.now[0] + timedelta(seconds=wh.RETRY_WAITS_S[0])  # type: ignore[index]
            await master.shipper.tick()  # not due yet: nothing is sent
            assert len(rec.got()) == 1
            master.advance(wh.RETRY_WAITS_S[0])
            await master.shipper.tick()
            master.advance(wh.RETRY_WAITS_S[1])
            await master.shipper.tick()
            assert len(rec.got()) == 3
            assert await deliveries(master) == []  # the third attempt was answered 200

        # A receiver that never answers: MAX_ATTEMPTS attempts, then kept as failed.
        await act(master, exp_id, "pause")
        await act(master, exp_id, "activate")
        for wait in (0, *wh.RETRY_WAITS_S):
            master.advance(wait)
            await master.shipper.tick()
        [dead] = await deliveries(master)
        assert dead.failed and dead.attempts == wh.MAX_ATTEMPTS

    async def test_specific_and_excluded_experiments(self, master: Hooked) -> None:
        with receiver() as rec:
            await create(
                master,
                master.admin,
                body(rec.url + "/specific", mode="WEBHOOK_MODE_SPECIFIC", name="mine"),
            )
            await create(master, master.admin, body(rec.url + "/all"))
            named = EXP + "integrations:\n  webhooks:\n    webhook_name: [mine]\n"
            excluded = EXP + "integrations:\n  webhooks:\n    exclude: true\n"
            for config in (EXP, named, excluded):
                await act(master, await experiment(master, config), "activate")
            await master.shipper.tick()
            paths = sorted(r.path for r in rec.got())
        assert paths == ["/all", "/all", "/specific"]

    async def test_custom_alert_fires_custom_triggers(self, master: Hooked) -> None:
        with receiver() as rec:
            await create(
                master,
                master.admin,
                {
                    **body(rec.url + "/custom"),
                    "webhookType": "WEBHOOK_TYPE_SLACK",
                    "triggers": [{"triggerType": "TRIGGER_TYPE_CUSTOM"}],
                },
            )
            exp_id = await experiment(master)
            r = await master.client.get(f"/api/v1/experiments/{exp_id}/trials", headers=master.user)
            trials = r.json()["trials"]
            if not trials:
                pytest.skip("this master makes a paused experiment's trials on activation")
            trial_id = trials[0]["id"]
            r = await master.client.post(
                "/api/v1/webhooks/custom",
                json={
                    "data": {"title": "t", "description": "d", "level": "LOG_LEVEL_WARNING"},
                    "experimentId": exp_id,
                    "trialId": trial_id,
                },
                headers=master.user,
            )
            assert r.status_code == 200, r.text
            await master.shipper.tick()
            [got] = rec.got()
        assert "*t*" in got.json()["blocks"][0]["text"]["text"]

    async def test_test_endpoint(self, master: Hooked) -> None:
        with receiver([500]) as rec:
            made = await create(master, master.admin, body(rec.url + "/t"))
            path = f"/api/v1/webhooks/{made['id']}/test"
            r = await master.client.post(path, headers=master.admin)
            assert r.status_code == 200 and r.json() == {"completed": False}
            r = await master.client.post(path, headers=master.admin)
            assert r.json() == {"completed": True}
            assert rec.got()[-1].json()["event_data"] == {"data": "test"}
            assert_error(await master.client.post(path, headers=master.user), 403)
