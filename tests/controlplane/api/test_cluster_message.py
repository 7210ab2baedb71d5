"""The cluster message: admins set, read and clear it; every caller of GET /api/v1/master (no
login needed, as the UI's login page shows it) sees it while it shows; users cannot set or read
the admin view; bad windows are a 400."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.conftest import Master

PATH = "/api/v1/master/cluster_message"


def _at(delta: timedelta) -> str:
    return (datetime.now(UTC) + delta).isoformat().replace("+00:00", "Z")


async def test_an_admin_sets_shows_and_clears_the_message(master: Master) -> None:
    r = await master.client.get("/api/v1/master")
    assert r.json().get("clusterMessage") is None
    body = {"message": "maintenance at 18:00", "startTime": _at(-timedelta(minutes=1)),
            "duration": "2h"}  # fmt: skip
    r = await master.client.put(PATH, headers=master.admin, json=body)
    assert r.status_code == 200, r.text
    r = await master.client.get("/api/v1/master")  # no login: the login page shows it
    shown = r.json()["clusterMessage"]
    assert shown["message"] == "maintenance at 18:00"
    end = datetime.fromisoformat(shown["endTime"])
    assert timedelta(minutes=118) < end - datetime.now(UTC) < timedelta(minutes=121)
    r = await master.client.get(PATH, headers=master.admin)
    assert r.json()["clusterMessage"]["message"] == "maintenance at 18:00"

    r = await master.client.delete(PATH, headers=master.admin)
    assert r.status_code == 200, r.text
    assert (await master.client.get("/api/v1/master")).json().get("clusterMessage") is None
    assert (await master.client.get(PATH, headers=master.admin)).json().get(
        "clusterMessage"
    ) is None


async def test_a_scheduled_message_waits_and_a_new_one_replaces_the_old(master: Master) -> None:
    later = {"message": "tomorrow", "startTime": _at(timedelta(hours=1))}
    assert (await master.client.put(PATH, headers=master.admin, json=later)).status_code == 200
    assert (await master.client.get("/api/v1/master")).json().get("clusterMessage") is None
    r = await master.client.get(PATH, headers=master.admin)  # the admin sees what is scheduled
    assert r.json()["clusterMessage"]["message"] == "tomorrow"
    now = {"message": "now", "startTime": _at(-timedelta(seconds=5))}
    assert (await master.client.put(PATH, headers=master.admin, json=now)).status_code == 200
    r = await master.client.get(PATH, headers=master.admin)
    assert r.json()["clusterMessage"]["message"] == "now"


async def test_users_may_not_set_read_or_clear_it(master: Master) -> None:
    body = {"message": "hi", "startTime": _at(timedelta(0))}
    assert (await master.client.put(PATH, headers=master.user, json=body)).status_code == 403
    assert (await master.client.get(PATH, headers=master.user)).status_code == 403
    assert (await master.client.delete(PATH, headers=master.user)).status_code == 403
    assert (await master.client.put(PATH, json=body)).status_code == 401


async def test_bad_messages_are_a_400_and_change_nothing(master: Master) -> None:
    start = _at(timedelta(0))
    for body in (
        {"message": "m", "startTime": start, "endTime": _at(timedelta(hours=1)), "duration": "1h"},
        {"message": "", "startTime": start},
        {"message": "x" * 300, "startTime": start},
        {"message": "a\x00b", "startTime": start},
        {"message": "m", "startTime": start, "duration": "-1h"},
        {"message": "m", "startTime": "yesterday"},
        {"message": "m", "startTime": "2026-01-01T00:00:00"},  # no zone: ambiguous
        {
            "message": "m",
            "startTime": _at(-timedelta(hours=2)),
            "endTime": _at(-timedelta(hours=1)),
        },
        {"message": "m"},
        {"message": 5, "startTime": start},
    ):
        r = await master.client.put(PATH, headers=master.admin, json=body)
        assert r.status_code == 400, (body, r.text)
    assert (await master.client.get(PATH, headers=master.admin)).json().get(
        "clusterMessage"
    ) is None
