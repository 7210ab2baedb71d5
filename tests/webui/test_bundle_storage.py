"""The built web UI keeps no token where a script can read it (the bundle, read as text)."""

from __future__ import annotations

import re

import pytest

from controlplane.api.webui import DIST

pytestmark = pytest.mark.skipif(
    not (DIST / "index.html").exists(), reason="web UI not built (scripts/setup.sh)"
)


def test_the_bundle_stores_no_token() -> None:
    """The built UI never writes a token to storage a script reads: the only storage writes are
    the theme and the last project shown, the only cookie write deletes an old UI's cookie, and
    nothing sends a bearer."""
    bundle = "\n".join(p.read_text() for p in (DIST / "assets").glob("*.js"))
    keys = r"resolute\.(?:theme|project)"
    theme_names = set(re.findall(rf"(\w+)\s*=\s*\"{keys}\"", bundle)) | {
        '"resolute.theme"',
        '"resolute.project"',
    }
    writes = re.findall(r"(?:localStorage|sessionStorage)\.setItem\(\s*([^,\s]+)\s*,", bundle)
    assert writes and all(w in theme_names for w in writes), writes
    assert "sessionStorage" not in bundle
    cookie_writes = re.findall(r"document\.cookie\s*=\s*([\"'`])(.*?)\1", bundle)
    assert all(v.startswith("auth=;") and "max-age=0" in v for _, v in cookie_writes), cookie_writes
    assert "Bearer" not in bundle and "Authorization" not in bundle
    assert "X-Resolute-CSRF" in bundle and "same-origin" in bundle
