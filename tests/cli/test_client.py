"""Unit tests for cli.client: URL canonicalisation, error mapping, retries, paging, NDJSON."""

from __future__ import annotations

import json

import httpx
import pytest

from cli.client import ApiClient, canonicalize_master_url, message_from_body
from cli.errors import (
    UNAUTHENTICATED_HINT,
    ApiError,
    CliError,
    Forbidden,
    MasterUnreachable,
    NotFound,
    StreamError,
    Unauthenticated,
)
from tests.cli.fake_master import error_body, paged


class TestCanonicalizeMasterUrl:
    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("localhost", "http://localhost:8080"),
            ("localhost:8080", "http://localhost:8080"),
            ("127.0.0.1", "http://127.0.0.1:8080"),
            ("127.0.0.1:9000", "http://127.0.0.1:9000"),
            ("http://127.0.0.1", "http://127.0.0.1:8080"),
            ("https://127.0.0.1", "https://127.0.0.1:8080"),
            ("https://127.0.0.1:443", "https://127.0.0.1:443"),
            ("HTTP://LocalHost:81/", "http://localhost:81"),
            ("127.0.0.1:8080/det/", "http://127.0.0.1:8080/det"),
            ("  127.0.0.1:8080  ", "http://127.0.0.1:8080"),
            ("[::1]", "http://[::1]:8080"),
            ("http://[::1]:9090", "http://[::1]:9090"),
        ],
    )
    def test_accepts(self, raw: str, expected: str) -> None:
        assert canonicalize_master_url(raw) == expected

    @pytest.mark.parametrize(
        ("raw", "reason"),
        [
            ("127.0.0.1:8080?x=1", "query"),
            ("127.0.0.1:8080/#frag", "fragment"),
            ("http://user@127.0.0.1", "credentials"),
            ("http://user:pw@127.0.0.1:8080", "credentials"),
            ("ftp://127.0.0.1", "scheme"),
            ("127.0.0.1:notaport", "port"),
            ("127.0.0.1:99999", "port"),
            ("", "empty"),
            ("http://", "host"),
        ],
    )
    def test_rejects(self, raw: str, reason: str) -> None:
        with pytest.raises(CliError) as err:
            canonicalize_master_url(raw)
        assert reason in str(err.value) or "invalid" in str(err.value)


def client_for(handler, **kwargs) -> tuple[ApiClient, list[float]]:
    sleeps: list[float] = []
    client = ApiClient(
        "http://127.0.0.1:8080",
        token="tok",
        transport=httpx.MockTransport(handler),
        sleep=sleeps.append,
        **kwargs,
    )
    return client, sleeps


class TestErrorMapping:
    @pytest.mark.parametrize(
        ("status", "exc_type", "text"),
        [
            (401, Unauthenticated, UNAUTHENTICATED_HINT),
            (403, Forbidden, "no access to experiment 3"),
            (404, NotFound, "no access to experiment 3"),
            (409, ApiError, "no access to experiment 3 (HTTP 409 from GET /api/v1/x)"),
            (500, ApiError, "(HTTP 500 from GET /api/v1/x)"),
        ],
    )
    def test_status_to_exception(self, status: int, exc_type: type, text: str) -> None:
        client, _ = client_for(
            lambda r: httpx.Response(status, json=error_body(7, "no access to experiment 3")),
            retries=0,
        )
        with pytest.raises(exc_type) as err:
            client.get("/api/v1/x")
        assert text in err.value.message
        assert err.value.status == status

    @pytest.mark.parametrize(
        ("body", "expected"),
        [
            ({"code": 5, "message": "top", "error": {"error": "inner"}}, "top"),
            ({"error": {"error": "inner"}}, "inner"),
            ({"error": {"message": "inner message"}}, "inner message"),
            ({"status_code": 404, "detail": "Not Found"}, "Not Found"),
            ({"error": "plain"}, "plain"),
            ([1, 2], ""),
        ],
    )
    def test_message_from_body(self, body: object, expected: str) -> None:
        assert message_from_body(body) == expected

    def test_multi_line_message_is_folded(self) -> None:
        body = error_body(3, "invalid experiment config:\n  a: required\n  b: bad\n")
        client, _ = client_for(lambda r: httpx.Response(400, json=body))
        with pytest.raises(ApiError) as err:
            client.post("/api/v1/experiments", {"x": 1})
        expected = "invalid experiment config: a: required; b: bad"
        assert err.value.message == f"{expected} (HTTP 400 from POST /api/v1/experiments)"

    def test_non_json_error_uses_first_line_of_text(self) -> None:
        client, _ = client_for(lambda r: httpx.Response(400, text="bad things\nmore"), retries=0)
        with pytest.raises(ApiError, match="bad things"):
            client.get("/api/v1/x")

    def test_auth_header_is_bearer_token(self) -> None:
        seen: list[str] = []
        client, _ = client_for(
            lambda r: (seen.append(r.headers["Authorization"]), httpx.Response(200, json={}))[1]
        )
        client.get("/api/v1/me")
        assert seen == ["Bearer tok"]


class TestRetries:
    def test_get_retries_503_with_backoff(self) -> None:
        statuses = iter([503, 502, 200])
        client, sleeps = client_for(lambda r: httpx.Response(next(statuses), json={"ok": 1}))
        assert client.get("/api/v1/x") == {"ok": 1}
        assert sleeps == [0.5, 1.0]

    def test_gives_up_after_max_retries(self) -> None:
        client, sleeps = client_for(lambda r: httpx.Response(504, text="gateway"), retries=2)
        with pytest.raises(ApiError, match="HTTP 504"):
            client.get("/api/v1/x")
        assert len(sleeps) == 2

    def test_post_is_not_retried_on_503(self) -> None:
        calls: list[int] = []
        client, sleeps = client_for(
            lambda r: (calls.append(1), httpx.Response(503, text="busy"))[1]
        )
        with pytest.raises(ApiError):
            client.post("/api/v1/experiments", {"a": 1})
        assert calls == [1] and sleeps == []

    def test_connection_refused_is_retried_then_reported(self) -> None:
        def refuse(request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError("Connection refused", request=request)

        client, sleeps = client_for(refuse, connect_retries=2)
        with pytest.raises(MasterUnreachable, match=r"cannot reach the master at http://127"):
            client.get("/info")
        assert sleeps == [0.5, 1.0]

    def test_login_style_call_has_no_retries(self) -> None:
        def refuse(request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError("Connection refused", request=request)

        client, sleeps = client_for(refuse)
        with pytest.raises(MasterUnreachable):
            client.post("/api/v1/auth/login", {"username": "u"}, retry=False)
        assert sleeps == []


class TestBodies:
    def test_empty_body_is_sent_as_no_body(self) -> None:
        seen: list[httpx.Request] = []
        client, _ = client_for(lambda r: (seen.append(r), httpx.Response(200))[1])
        assert client.post("/api/v1/experiments/1/pause") == {}
        client.post("/api/v1/auth/logout", {})
        assert [r.content for r in seen] == [b"", b""]
        assert "content-type" not in seen[0].headers

    def test_json_and_pre_encoded_bodies(self) -> None:
        seen: list[httpx.Request] = []
        client, _ = client_for(lambda r: (seen.append(r), httpx.Response(200, json={}))[1])
        client.post("/a", {"x": 1})
        progress: list[int] = []
        client.post("/b", b'{"y": 2}', progress=progress.append)
        assert json.loads(seen[0].content) == {"x": 1}
        assert json.loads(seen[1].content) == {"y": 2}
        assert seen[1].headers["content-length"] == "8"
        assert sum(progress) == 8

    def test_query_lists_repeat_and_bools_are_lowercase(self) -> None:
        seen: list[httpx.Request] = []
        client, _ = client_for(lambda r: (seen.append(r), httpx.Response(200, json={}))[1])
        client.get("/api/v1/experiments", {"users": ["a", "b"], "archived": False})
        assert seen[0].url.query == b"users=a&users=b&archived=false"


class TestPaginate:
    def test_follows_end_index(self) -> None:
        items = [{"id": i} for i in range(7)]
        reply = paged("things", items)
        client, _ = client_for(lambda r: httpx.Response(200, json=reply(r)))
        assert client.paginate("/api/v1/things", "things", page_size=3) == items

    def test_stops_on_inconsistent_pagination(self) -> None:
        page = {"things": [{"id": 1}], "pagination": {"endIndex": 0, "total": 10}}
        client, _ = client_for(lambda r: httpx.Response(200, json=page))
        assert client.paginate("/api/v1/things", "things") == [{"id": 1}]


class TestStream:
    def test_yields_results_and_skips_blank_lines(self) -> None:
        text = '{"result": {"id": 1, "message": "a\\n"}}\n\n{"result": {"id": 2, "message": "b"}}\n'
        client, _ = client_for(lambda r: httpx.Response(200, text=text))
        assert [e["id"] for e in client.stream("/api/v1/trials/1/logs")] == [1, 2]

    def test_error_line_raises(self) -> None:
        text = '{"result": {"id": 1}}\n{"error": {"code": 13, "message": "db gone"}}\n'
        client, _ = client_for(lambda r: httpx.Response(200, text=text))
        stream = client.stream("/api/v1/trials/1/logs")
        assert next(stream) == {"id": 1}
        with pytest.raises(StreamError, match="db gone"):
            next(stream)

    def test_http_error_before_stream(self) -> None:
        client, _ = client_for(lambda r: httpx.Response(404, json=error_body(5, "trial 9")))
        with pytest.raises(NotFound, match="trial 9"):
            list(client.stream("/api/v1/trials/9/logs"))

    def test_malformed_line(self) -> None:
        client, _ = client_for(lambda r: httpx.Response(200, text="not json\n"))
        with pytest.raises(CliError, match="malformed"):
            list(client.stream("/api/v1/trials/1/logs"))
