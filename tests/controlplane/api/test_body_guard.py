"""JSON bodies nested too deep or not UTF-8 are refused with a 400 before they are parsed.

Both were 500s: msgspec raises RecursionError on ~1,000 levels and UnicodeDecodeError on invalid
UTF-8, neither of which is a decode error to Litestar.
"""

from __future__ import annotations

import pytest

from controlplane.api.body_guard import MAX_JSON_DEPTH, check_json_body, json_depth
from controlplane.domain.errors import InvalidArgument
from tests.conftest import Master
from tests.controlplane.api.test_bad_input import assert_error, new_trial


class TestJsonDepth:
    @pytest.mark.parametrize(
        ("body", "depth"),
        [
            (b"", 0),
            (b"5", 0),
            (b'"text"', 0),
            (b"{}", 1),
            (b"[]", 1),
            (b'{"a": [1, {"b": []}]}', 4),
            (b"[[[]], [[[]]]]", 4),
            (b'{"a": "[[[[[[[[", "b": "{{{{"}', 1),  # brackets inside strings do not count
            (b'["\\"[[[[", ["\\\\"], "]]]]"]', 2),  # nor behind escaped quotes
            (b'{"k\\"[": {"\\u005b": 1}}', 2),
            (b"[" * 5000 + b"]" * 5000, 5000),
            (b"[" * 5000, 5000),  # unclosed: still as deep as it gets
            (b'"unterminated [[[[', 0),
            (b"[]" * 600_000 + b"[[[]]]", 3),  # across the 1 MiB chunks it counts in
            (b"[" * 1_500_000 + b"]" * 1_500_000, 1_500_000),
        ],
        ids=lambda v: f"{v[:24]!r}...({len(v)} bytes)" if isinstance(v, bytes) else str(v),
    )
    def test_depth(self, body: bytes, depth: int) -> None:
        assert json_depth(body) == depth

    def test_deep_bodies_are_refused_with_the_limit(self) -> None:
        check_json_body(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH)
        with pytest.raises(InvalidArgument, match=f"nested more than {MAX_JSON_DEPTH} levels"):
            check_json_body(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))

    @pytest.mark.parametrize(
        "body",
        [
            b'{"a": "\xff"}',
            b'{"a": "\xc3"}',  # a truncated two-byte sequence
            b'{"a": "\xed\xa0\x80"}',  # an encoded surrogate (CESU-8)
            b'{"\xfe": 1}',
            b"\xef\xbb\xbf\xff",
        ],
    )
    def test_invalid_utf8_is_refused(self, body: bytes) -> None:
        with pytest.raises(InvalidArgument, match="not valid UTF-8"):
            check_json_body(body)

    def test_valid_utf8_passes(self) -> None:
        check_json_body('{"name": "Größe 😀", "k": "日本"}'.encode())


def deep(levels: int, leaf: str = "1") -> str:
    return '{"a": ' * levels + leaf + "}" * levels


async def _routes(master: Master) -> list[tuple[str, str]]:
    trial = await new_trial(master)
    return [
        ("POST", "/api/v1/auth/login"),
        ("POST", "/api/v1/experiments"),
        ("PATCH", f"/api/v1/experiments/{trial['experimentId']}"),
        ("POST", f"/api/v1/trials/{trial['id']}/metrics"),
        ("POST", "/api/v1/templates/t"),
        ("PATCH", "/api/v1/templates/t"),
        ("POST", "/api/v1/users/2/password"),
        ("POST", "/api/v1/checkpoints"),
        ("POST", "/api/v1/task/logs"),
    ]


async def test_deep_json_is_400_on_every_route_that_takes_a_body(master: Master) -> None:
    headers = {**master.user, "content-type": "application/json"}
    for method, path in await _routes(master):
        for body in (deep(1000), deep(100_000), "[" * 1000 + "]" * 1000, deep(1000)[:-500]):
            r = await master.client.request(method, path, content=body, headers=headers)
            assert_error(r, 400, "nested more than")
        for body in ('{"metrics": ' + deep(150) + "}", '{"config": ' + deep(150) + "}"):
            r = await master.client.request(method, path, content=body, headers=headers)
            assert_error(r, 400, "nested more than")


async def test_invalid_utf8_is_400_on_every_route_that_takes_a_body(master: Master) -> None:
    headers = {**master.user, "content-type": "application/json"}
    for method, path in await _routes(master):
        for body in (b'{"username": "\xff\xfe", "password": "x"}', b'{"config": "n\xc3"}'):
            r = await master.client.request(method, path, content=body, headers=headers)
            assert_error(r, 400, "UTF-8")


async def test_deep_yaml_config_is_400(master: Master) -> None:
    for text in ("a: " + "[" * 1000 + "]" * 1000 + "\n", "a: " + "{b: " * 1000 + "1" + "}" * 1000):
        r = await master.client.post(
            "/api/v1/experiments", json={"config": text}, headers=master.user
        )
        assert_error(r, 400)
