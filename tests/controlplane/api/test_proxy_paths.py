"""The proxy's path and credential parsing: what may reach a task's service, as a table."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from controlplane.api.interactive import _check_address
from controlplane.api.proxy import (
    _HOP_BY_HOP,
    _WS_DROP,
    BadPath,
    _cookie_token,
    _token,
    _upstream_headers,
    split_path,
)
from controlplane.api.schemas.interactive import AllocationProxyAddress
from controlplane.domain.errors import InvalidArgument, NotFound

TASK = "0b8f9a3e-4c59-4a57-9d7e-2f0f2b6c1a11"


@pytest.mark.parametrize(
    ("path", "rest"),
    [
        (f"/proxy/{TASK}/", ""),
        (f"/proxy/{TASK}/lab", "lab"),
        (f"/proxy/{TASK}/api/kernels/abc/channels", "api/kernels/abc/channels"),
        (f"/proxy/{TASK}/files/a%20b.txt", "files/a%20b.txt"),
        (f"/proxy/{TASK}/a..b/c.d", "a..b/c.d"),
    ],
)
def test_paths_inside_the_prefix(path: str, rest: str) -> None:
    assert split_path(path) == (TASK, rest)


@pytest.mark.parametrize(
    "path",
    [
        f"/proxy/{TASK}/../other/", f"/proxy/{TASK}/%2e%2e/x", f"/proxy/{TASK}/%2E%2e/x",
        f"/proxy/{TASK}/.%2e/x", f"/proxy/{TASK}/./x", f"/proxy/{TASK}/%2e/x",
        f"/proxy/{TASK}/a%00b", f"/proxy/{TASK}/a%2fb", f"/proxy/{TASK}/a%2Fb",
        f"/proxy/{TASK}/a%5cb", f"/proxy/{TASK}/a\\b", "/proxy/../api/v1/me", "/proxy/%2e%2e/x",
    ],
)  # fmt: skip
def test_paths_that_leave_the_prefix_are_refused(path: str) -> None:
    with pytest.raises(BadPath, match="may not leave"):
        split_path(path)


@pytest.mark.parametrize("path", ["/proxy/", "/proxy//x", "/elsewhere/x", "/proxy/" + "a" * 129])
def test_paths_without_a_task(path: str) -> None:
    with pytest.raises(NotFound):
        split_path(path)


@given(st.lists(st.text(alphabet="ab.%2eE/\\0fF5c", max_size=6), max_size=5))
def test_no_accepted_path_decodes_to_a_dot_segment(segments: list[str]) -> None:
    from urllib.parse import unquote

    try:
        _, rest = split_path(f"/proxy/{TASK}/" + "/".join(segments))
    except (BadPath, NotFound):
        return
    assert all(unquote(s) not in (".", "..") and "/" not in unquote(s) for s in rest.split("/"))


def test_credentials() -> None:
    assert _token({"authorization": "Bearer abc"}) == "abc"
    assert _token({"authorization": "bearer  abc "}) == "abc"
    assert _token({"cookie": "x=1; auth=tok; y=2"}) == "tok"
    assert _token({"authorization": "Basic abc", "cookie": "auth=tok"}) == "tok"
    assert _token({"authorization": "Bearer "}) is None
    assert _cookie_token({"cookie": "auth="}) is None
    assert _cookie_token({"cookie": '"unbalanced'}) is None
    assert _token({}) is None


@pytest.mark.parametrize("value", ["127.0.0.1:8888", "node-1.local:1"])
def test_proxy_addresses(value: str) -> None:
    assert _check_address(value) == value


@pytest.mark.parametrize(
    "value", ["", "127.0.0.1", ":80", "h:0", "h:65536", "h:x", "a/b:1", "u@h:1", "h\x00:1",
              "[::1]:80", "h?x:1", "h:¹", "h:٣"],
)  # fmt: skip
def test_bad_proxy_addresses(value: str) -> None:
    with pytest.raises(InvalidArgument, match="proxyAddress"):
        _check_address(value)


@pytest.mark.parametrize("secret", [None, "the-task-secret"])
@pytest.mark.parametrize("drop", [_HOP_BY_HOP, _WS_DROP])
def test_the_proxy_presents_only_its_own_secret(secret: str | None, drop: frozenset[str]) -> None:
    # A user's own X-Resolute-Proxy-Secret never reaches the task: only the stored one does.
    scope = {
        "headers": [
            (b"x-resolute-proxy-secret", b"guess"),
            (b"X-Resolute-Proxy-Secret", b"guess2"),
            (b"accept", b"*/*"),
        ],
        "client": ("127.0.0.9", 5),
    }
    out = _upstream_headers(scope, drop, secret)
    sent = [v for k, v in out if k.lower() == b"x-resolute-proxy-secret"]
    assert sent == ([secret.encode()] if secret else [])
    assert (b"accept", b"*/*") in out


@pytest.mark.parametrize(
    "secret",
    ["short", "x" * 129, "a" * 20 + "/", "a" * 20 + "\x00", "a" * 20 + " b", 12345678901234567],
)
def test_bad_proxy_secrets(secret: object) -> None:
    with pytest.raises(ValidationError, match="proxy"):
        AllocationProxyAddress.model_validate(
            {"proxyAddress": "127.0.0.1:1", "proxySecret": secret}
        )
