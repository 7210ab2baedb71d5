"""The real `determined==0.38.1` client's webhook bindings against a live master: it creates,
lists and deletes webhooks in its own shapes (as Determined's e2e test_webhooks.py does), and an
experiment's state change reaches a receiver on 127.0.0.1 from the master's own loop, signed
with the configured key, without anyone running a pass by hand."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cli.auth import hash_password
from tests.compat.conftest import PASSWORD, RunningMaster, master_process
from tests.support.webhook_receiver import Receiver, receiver

pytestmark = [pytest.mark.compat, pytest.mark.slow]

KEY = "compat-signing-key"
CONFIG = "name: hooked\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n"

CLIENT = r"""
import json, os, sys, warnings
warnings.simplefilter("ignore", FutureWarning)
from determined.common.api import authentication, bindings
sess = authentication.login(os.environ["MASTER"], "admin", os.environ["PASSWORD"])
url = os.environ["RECEIVER"]
made = bindings.post_PostWebhook(sess, body=bindings.v1Webhook(
    url=url + "/slack",
    webhookType=bindings.v1WebhookType.SLACK,
    triggers=[bindings.v1Trigger(
        triggerType=bindings.v1TriggerType.EXPERIMENT_STATE_CHANGE,
        condition={"state": "ACTIVE"},
    )],
    mode=bindings.v1WebhookMode.WORKSPACE,
    name="",
    workspaceId=None,
)).webhook
spare = bindings.post_PostWebhook(sess, body=bindings.v1Webhook(
    url=url + "/spare",
    webhookType=bindings.v1WebhookType.DEFAULT,
    triggers=[bindings.v1Trigger(triggerType=bindings.v1TriggerType.CUSTOM, condition={})],
    mode=bindings.v1WebhookMode.SPECIFIC,
    name="spare",
    workspaceId=1,
)).webhook
listed = bindings.get_GetWebhooks(sess).webhooks
bindings.patch_PatchWebhook(sess, id=spare.id, body=bindings.v1PatchWebhook(url=url + "/moved"))
moved = [w.url for w in bindings.get_GetWebhooks(sess).webhooks if w.id == spare.id]
tested = bindings.post_TestWebhook(sess, id=spare.id).completed
bindings.delete_DeleteWebhook(sess, id=spare.id)
left = [w.id for w in bindings.get_GetWebhooks(sess).webhooks]
print("RESULT " + json.dumps({
    "made": [made.id, made.url, made.webhookType.value, made.mode.value,
             [t.triggerType.value for t in made.triggers], made.triggers[0].condition],
    "spare": [spare.name, spare.workspaceId, spare.mode.value],
    "listed": sorted(w.id for w in listed),
    "moved": moved,
    "tested": tested,
    "left": left,
}))
"""


@pytest.fixture(scope="module")
def hooked_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningMaster]:
    with master_process(tmp_path_factory, {"DET_WEBHOOKS_SIGNING_KEY": KEY}) as master:
        yield master


def _client(det_bin: Path, master: RunningMaster, rec: Receiver) -> dict[str, object]:
    env = {**os.environ, "MASTER": master.url, "PASSWORD": PASSWORD, "RECEIVER": rec.url}
    done = subprocess.run(
        [str(det_bin / "python"), "-c", CLIENT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return dict(json.loads(line.removeprefix("RESULT ")))


async def _until(rec: Receiver, path: str) -> None:
    for _ in range(600):  # the master's loop sends once the activation commits
        if any(r.path == path for r in rec.got()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"nothing reached {path}: {rec.got()}")


async def test_real_client_manages_webhooks_and_the_master_delivers(
    det_bin: Path, hooked_master: RunningMaster, admin_headers: dict[str, str]
) -> None:
    with receiver() as rec:
        got = await asyncio.to_thread(_client, det_bin, hooked_master, rec)
        made_id, url, kind, mode, triggers, condition = got["made"]  # type: ignore[misc]
        assert url == rec.url + "/slack" and kind == "WEBHOOK_TYPE_SLACK"
        assert mode == "WEBHOOK_MODE_WORKSPACE"
        assert triggers == ["TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE"]
        assert condition == {"state": "ACTIVE"}
        assert got["spare"] == ["spare", 1, "WEBHOOK_MODE_SPECIFIC"]
        assert made_id in got["listed"] and len(got["listed"]) == 2  # type: ignore[arg-type]
        assert got["moved"] == [rec.url + "/moved"] and got["tested"] is True
        assert got["left"] == [made_id]

        async with httpx.AsyncClient(base_url=hooked_master.url, headers=admin_headers) as http:
            r = await http.post("/api/v1/experiments", json={"config": CONFIG, "activate": False})
            assert r.status_code == 200, r.text
            exp_id = r.json()["experiment"]["id"]
            r = await http.post(f"/api/v1/experiments/{exp_id}/activate")
            assert r.status_code == 200, r.text
        await _until(rec, "/slack")

    [sent] = [r for r in rec.got() if r.path == "/slack"]
    slack = sent.json()
    assert slack["attachments"][0]["blocks"][0]["text"]["text"].endswith(f"hooked (#{exp_id})")
    stamp = sent.headers["X-Determined-AI-Signature-Timestamp"]
    want = hmac.new(KEY.encode(), f"{stamp},{sent.body}".encode(), hashlib.sha256).hexdigest()
    assert sent.headers["X-Determined-AI-Signature"] == want
    assert [r.json()["event_data"] for r in rec.got() if r.path == "/moved"] == [{"data": "test"}]


@pytest.fixture(scope="module")
def admin_headers(hooked_master: RunningMaster) -> dict[str, str]:
    body = {"username": "admin", "password": hash_password(PASSWORD), "isHashed": True}
    reply = httpx.post(f"{hooked_master.url}/api/v1/auth/login", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    return {"Authorization": f"Bearer {reply.json()['token']}"}
