"""Security headers: the web UI's CSP and friends on /det/, nosniff on the API, no-store on
auth responses, and nothing of ours on the proxy's responses."""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.api import security_headers, webui
from tests.conftest import Master

UI_HEADERS = {
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}
CSP_PARTS = (
    "script-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "frame-ancestors 'none'",
    "default-src 'self'",
)


@pytest.fixture
def dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "dist"
    (root / "assets").mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>app</title>")
    (root / "assets" / "index-abc123.js").write_text("console.log(1)")
    monkeypatch.setattr(webui, "DIST", root)
    return root


def assert_ui_headers(headers: dict[str, str] | object, path: str) -> None:
    h = dict(headers)  # type: ignore[call-overload]
    for name, value in UI_HEADERS.items():
        assert h.get(name) == value, (path, name, h.get(name))
    csp = h.get("content-security-policy", "")
    for part in CSP_PARTS:
        assert part in csp, (path, part, csp)
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp


async def test_the_ui_gets_its_security_headers(master: Master, dist: Path) -> None:
    for path in ("/det", "/det/", "/det/experiments/3", "/det/assets/index-abc123.js"):
        r = await master.client.get(path)
        assert r.status_code == 200, path
        assert_ui_headers(r.headers, path)
    r = await master.client.get("/", follow_redirects=False)
    assert_ui_headers(r.headers, "/")
    # The interactive tasks' static pages live under /det/ too (a meta refresh, no script).
    r = await master.client.get("/det/wait/notebook/6d7a8c3e-1c7e-4a47-9d59-4a4cb2b4e6c1")
    assert r.status_code == 200
    assert_ui_headers(r.headers, "/det/wait")


async def test_api_responses_are_nosniff_and_auth_ones_no_store(master: Master) -> None:
    r = await master.client.get("/api/v1/experiments", headers=master.admin)
    assert r.status_code == 200
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" not in r.headers
    for path in ("/api/v1/me", "/api/v1/experiments/999999"):  # errors too
        r = await master.client.get(path, headers=master.admin)
        assert r.headers["x-content-type-options"] == "nosniff", path
    assert r.status_code == 404
    r = await master.client.get("/api/v1/me", headers=master.admin)
    assert r.headers["cache-control"] == "no-store"
    r = await master.client.post("/api/v1/auth/login", json={"username": "x", "password": "y"})
    assert r.status_code == 403 and r.headers["cache-control"] == "no-store"
    r = await master.client.get("/api/v1/no/such/route")
    assert r.status_code == 404 and r.headers["x-content-type-options"] == "nosniff"


async def test_proxied_responses_get_none_of_ours(master: Master) -> None:
    r = await master.client.get("/proxy/no-such-task/")
    assert r.status_code in (401, 404)
    for name in ("content-security-policy", "x-frame-options", "referrer-policy"):
        assert security_headers.UI_CSP not in r.headers.get(name, ""), name
    assert r.headers.get("x-frame-options") != "DENY"


@pytest.mark.parametrize(
    ("path", "ui", "no_store"),
    [
        ("/", True, False),
        ("/det", True, False),
        ("/det/assets/x.js", True, False),
        ("/detective", False, False),
        ("/api/v1/auth/login", False, True),
        ("/api/v1/auth/logout", False, True),
        ("/api/v1/me", False, True),
        ("/api/v1/users/me", False, True),
        ("/api/v1/metrics", False, False),
        ("/api/v1/experiments", False, False),
        ("/info", False, False),
    ],
)
def test_headers_for(path: str, ui: bool, no_store: bool) -> None:
    names = dict(security_headers.headers_for(path))
    assert names[b"x-content-type-options"] == b"nosniff"
    assert (b"content-security-policy" in names) is ui
    assert (names.get(b"cache-control") == b"no-store") is no_store
