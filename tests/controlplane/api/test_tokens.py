"""Access tokens (`/api/v1/tokens`, `det token`): a user makes, lists, describes and revokes
their own; an admin anyone's; a revoked or expired token stops working at once; a login's
logout leaves access tokens alone; bad input is a 400 and another user's token is a 403."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.conftest import Master


async def _make(master: Master, headers: dict[str, str], user_id: int, **body: object):  # type: ignore[no-untyped-def]
    return await master.client.post(
        "/api/v1/tokens", headers=headers, json={"userId": user_id, **body}
    )


async def _me(master: Master, headers: dict[str, str]) -> dict[str, object]:
    r = await master.client.get("/api/v1/me", headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["user"]


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_user_makes_uses_lists_and_revokes_an_access_token(master: Master) -> None:
    me = await _me(master, master.user)
    before = datetime.now(UTC)
    r = await _make(master, master.user, int(me["id"]), lifespan="24h", description="ci bot")
    assert r.status_code == 200, r.text
    token, token_id = r.json()["token"], r.json()["tokenId"]
    assert (await _me(master, _bearer(token)))["username"] == "determined"

    r = await master.client.get("/api/v1/tokens", headers=master.user)
    assert r.status_code == 200, r.text
    (info,) = r.json()["tokenInfo"]
    assert info["id"] == token_id and info["userId"] == me["id"]
    assert info["tokenType"] == "TOKEN_TYPE_ACCESS_TOKEN" and info["revoked"] is False
    assert info["description"] == "ci bot"
    expiry = datetime.fromisoformat(info["expiry"])
    assert before + timedelta(hours=23) < expiry < before + timedelta(hours=25)

    # logging out of the user's login session does not end the access token
    assert (await master.client.post("/api/v1/auth/logout", headers=master.user)).status_code == 200
    assert (await master.client.get("/api/v1/me", headers=_bearer(token))).status_code == 200

    r = await master.client.patch(
        f"/api/v1/tokens/{token_id}", headers=_bearer(token), json={"setRevoked": True}
    )
    assert r.status_code == 200, r.text
    assert r.json()["tokenInfo"]["revoked"] is True
    assert (await master.client.get("/api/v1/me", headers=_bearer(token))).status_code == 401

    # a revoked token is listed only with showInactive
    r = await master.client.get("/api/v1/tokens", headers=master.admin)
    assert r.json()["tokenInfo"] == []
    r = await master.client.get(
        "/api/v1/tokens", headers=master.admin, params={"showInactive": "true"}
    )
    assert [t["id"] for t in r.json()["tokenInfo"]] == [token_id]


async def test_users_manage_only_their_own_tokens_and_admins_everyones(master: Master) -> None:
    admin_id = int((await _me(master, master.admin))["id"])
    user_id = int((await _me(master, master.user))["id"])
    # a user cannot make a token for the admin (it would be the admin's power)
    assert (await _make(master, master.user, admin_id)).status_code == 403
    # the admin may make one for the user, and the user sees and may revoke it
    r = await _make(master, master.admin, user_id, description="from admin")
    assert r.status_code == 200, r.text
    for_user = r.json()["tokenId"]
    r = await _make(master, master.admin, admin_id)
    admins = r.json()["tokenId"]

    r = await master.client.get("/api/v1/tokens", headers=master.user)
    assert [t["id"] for t in r.json()["tokenInfo"]] == [for_user]
    r = await master.client.get("/api/v1/tokens", headers=master.user, params={"username": "admin"})
    assert r.status_code == 403
    r = await master.client.get("/api/v1/tokens", headers=master.admin)
    assert {t["id"] for t in r.json()["tokenInfo"]} == {for_user, admins}
    r = await master.client.get(
        "/api/v1/tokens", headers=master.admin, params={"username": "determined"}
    )
    assert [t["id"] for t in r.json()["tokenInfo"]] == [for_user]
    r = await master.client.get(
        "/api/v1/tokens", headers=master.admin, params={"tokenIds": [admins]}
    )
    assert [t["id"] for t in r.json()["tokenInfo"]] == [admins]

    # the admin's token: refused (403, as Determined); an id that is no token: 404
    for token_id, status in ((admins, 403), (999_999, 404)):
        r = await master.client.patch(
            f"/api/v1/tokens/{token_id}", headers=master.user, json={"setRevoked": True}
        )
        assert r.status_code == status, r.text
    r = await master.client.patch(
        f"/api/v1/tokens/{for_user}", headers=master.user, json={"description": "mine now"}
    )
    assert r.status_code == 200 and r.json()["tokenInfo"]["description"] == "mine now"


async def test_bad_input_is_a_clear_400_and_changes_nothing(master: Master) -> None:
    user_id = int((await _me(master, master.user))["id"])
    for body in (
        {"lifespan": "abc"},
        {"lifespan": "-5h"},
        {"description": "a\x00b"},
        {"description": "x" * 5000},
        {"lifespan": 5},
    ):
        r = await _make(master, master.user, user_id, **body)
        assert r.status_code == 400, (body, r.text)
    assert (await _make(master, master.admin, 987_654)).status_code == 404
    assert (await _make(master, master.admin, 2**40)).status_code == 400
    r = await master.client.patch("/api/v1/tokens/99999999999", headers=master.admin, json={})
    assert r.status_code == 400
    r = await master.client.get(
        "/api/v1/tokens", headers=master.admin, params={"tokenIds": [2**40]}
    )
    assert r.status_code == 400
    r = await master.client.get(
        "/api/v1/tokens", headers=master.admin, params={"username": "nobody"}
    )
    assert r.status_code == 404
    r = await master.client.get(
        "/api/v1/tokens", headers=master.admin, params={"showInactive": "true"}
    )
    assert r.json()["tokenInfo"] == []
    assert (await master.client.get("/api/v1/tokens")).status_code == 401


async def test_a_login_session_is_not_an_access_token(master: Master) -> None:
    """Login sessions are not listed, and their ids cannot be patched as access tokens."""
    r = await master.client.get(
        "/api/v1/tokens", headers=master.admin, params={"showInactive": "true"}
    )
    assert r.json()["tokenInfo"] == []
    for session_id in (1, 2):
        r = await master.client.patch(
            f"/api/v1/tokens/{session_id}", headers=master.admin, json={"setRevoked": True}
        )
        assert r.status_code == 404
    assert (await master.client.get("/api/v1/me", headers=master.admin)).status_code == 200
