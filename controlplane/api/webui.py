"""The web UI's files: the built single-page app under /det/, and / redirecting to it.

The build output (webui/ sources, `npm run build`) lies in controlplane/webui_dist/. Hashed
assets (/det/assets/<name>-<hash>.js) never change under one name, so they are cached for a
year; index.html is no-cache, so a new master's UI is picked up on the next load. Every other
path under /det/ is the app's own route (/det/experiments/3) and gets index.html. /det/wait and
/det/interactive belong to the interactive tasks' pages (their own module).
"""

from __future__ import annotations

import mimetypes
from pathlib import Path, PurePosixPath

from litestar import Response, get
from litestar.params import FromPath
from litestar.response import Redirect

DIST = Path(__file__).resolve().parent.parent / "webui_dist"
YEAR = "public, max-age=31536000, immutable"
NO_CACHE = "no-cache"

MISSING = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Resolute: web UI not built</title></head><body><main>
<h1>The web UI is not built</h1>
<p>This master has no web UI files ({dist}). Build them with <code>scripts/setup.sh</code>
(or <code>cd webui &amp;&amp; npm ci &amp;&amp; npm run build</code>). The REST API under
<code>/api/v1</code> and the <code>det</code> CLI work without it.</p></main></body></html>
"""


def _index(dist: Path) -> Response[bytes]:
    index = dist / "index.html"
    if not index.is_file():
        body = MISSING.format(dist=dist).encode()
        return Response(body, status_code=503, media_type="text/html; charset=utf-8")
    return Response(
        index.read_bytes(),
        media_type="text/html; charset=utf-8",
        headers={"Cache-Control": NO_CACHE},
    )


def resolve_asset(dist: Path, path: str) -> Path | None:
    """The file `path` names inside `dist`, or None (never a file outside it)."""
    parts = PurePosixPath(path).parts
    if not parts or any(p in ("..", "") or "\x00" in p or p.startswith(".") for p in parts):
        return None
    candidate = dist.joinpath(*parts)
    try:
        candidate.resolve().relative_to(dist.resolve())
    except ValueError:
        return None
    return candidate if candidate.is_file() else None


@get("/", include_in_schema=False)
async def root() -> Redirect:
    return Redirect("/det/", status_code=302)


@get("/det", include_in_schema=False)
async def det_index() -> Response[bytes]:
    return _index(DIST)


@get("/det/{path:path}", include_in_schema=False)
async def det_files(path: FromPath[str]) -> Response[bytes]:
    asset = resolve_asset(DIST, path.lstrip("/"))
    if asset is None:
        return _index(DIST)
    media = mimetypes.guess_type(asset.name)[0] or "application/octet-stream"
    hashed = asset.parent.name == "assets"
    return Response(
        asset.read_bytes(),
        media_type=media,
        headers={"Cache-Control": YEAR if hashed else NO_CACHE},
    )


ROUTES = [root, det_index, det_files]
