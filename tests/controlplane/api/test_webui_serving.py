"""The master serves the web UI: / redirects to /det/, app routes get index.html (no-cache),
hashed assets are cached for a year, nothing outside the build is reachable, and a master
without a build says how to make one."""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.api import webui
from tests.conftest import Master


@pytest.fixture
def dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "dist"
    (root / "assets").mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>app</title>")
    (root / "assets" / "index-abc123.js").write_text("console.log(1)")
    (root / "favicon.svg").write_text("<svg/>")
    (tmp_path / "secret.txt").write_text("no")
    monkeypatch.setattr(webui, "DIST", root)
    return root


async def test_routes_assets_and_caching(master: Master, dist: Path) -> None:
    r = await master.client.get("/", follow_redirects=False)
    assert r.status_code == 302 and r.headers["location"] == "/det/"
    for path in ("/det", "/det/", "/det/experiments/12", "/det/projects/1/experiments?x=1"):
        r = await master.client.get(path)
        assert r.status_code == 200, path
        assert r.text.startswith("<!doctype html>")
        assert r.headers["cache-control"] == "no-cache"
    r = await master.client.get("/det/assets/index-abc123.js")
    assert r.text == "console.log(1)"
    assert "javascript" in r.headers["content-type"]
    assert r.headers["cache-control"] == webui.YEAR
    r = await master.client.get("/det/favicon.svg")
    assert r.headers["cache-control"] == "no-cache"


@pytest.mark.parametrize(
    "path", ["../secret.txt", "assets/../../secret.txt", ".hidden", "assets/\x00x", "", "/"]
)
def test_resolve_asset_stays_inside_the_build(dist: Path, path: str) -> None:
    assert webui.resolve_asset(dist, path) is None


async def test_escapes_get_the_app_not_a_file(master: Master, dist: Path) -> None:
    for path in ("/det/..%2Fsecret.txt", "/det/assets/..%2F..%2Fsecret.txt", "/det/%00"):
        r = await master.client.get(path)
        assert r.status_code in (200, 400, 404), path
        assert r.text != "no"


async def test_a_master_without_a_build_says_how_to_build_it(
    master: Master, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webui, "DIST", tmp_path / "nothing")
    r = await master.client.get("/det/experiments/1")
    assert r.status_code == 503
    assert "scripts/setup.sh" in r.text
    r = await master.client.get("/api/v1/master")
    assert r.status_code in (200, 401)


async def test_the_interactive_pages_win_over_the_apps_catch_all(
    master: Master, dist: Path
) -> None:
    """`det notebook start` opens /det/interactive/… and /det/wait/…: those pages send the
    browser to the task's proxy; the app's /det/{path} fallback must not take them."""
    nb = "0b4c9f4e-5f0e-4a53-9d55-2f6f3f0c1a2b"
    r = await master.client.get(f"/det/interactive/{nb}/jupyter-lab/x/default/wait")
    assert r.status_code == 200 and f"/proxy/{nb}/" in r.text, r.text
    r = await master.client.get(f"/det/wait/notebook/{nb}")
    assert r.status_code == 200 and f"/proxy/{nb}/" in r.text, r.text
    assert "<title>app</title>" not in r.text
    # Not a task id: a 400 that says so, not a page that sends the browser somewhere made up.
    for bad in ("abc-123", "%2e%2e", "a%00b", nb.upper() + "x"):
        r = await master.client.get(f"/det/interactive/{bad}/jupyter-lab")
        assert r.status_code == 400 and "not the id of" in r.text, (bad, r.text)
    r = await master.client.get("/det/wait/notebook")
    assert r.status_code == 400
