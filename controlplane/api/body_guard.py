"""The one check every JSON request body passes before it is decoded.

msgspec, which decodes Litestar's request bodies, raises RecursionError on JSON nested about
1,000 levels deep and UnicodeDecodeError on bytes that are not UTF-8; Litestar turns neither
into a client error, so both were 500s. `GuardedRequest` (the app's request class) refuses such
bodies with a 400 first, for every route, whatever its handler does with the body.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from typing import Any

from litestar import Request

from controlplane.domain.errors import InvalidArgument

MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays and objects a request body may have (protobuf's default limit)."""

_ESCAPE = re.compile(rb"\\.", re.DOTALL)  # a backslash and the character it escapes
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"[]{}')))
_QUOTED = re.compile(rb'"[^"]*"')
_CHUNK = 1 << 20
_INLINE_CHECK_BYTES = 1 << 20
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def json_depth(body: bytes, stop_above: int | None = None) -> int:
    """The deepest nesting of arrays and objects in `body`; brackets inside strings do not count.

    Linear in the body's size, in C loops but for the final count, and tolerant of invalid JSON
    (the decoder refuses that afterwards): escapes are dropped, then everything but quotes and
    brackets, then quoted runs (an unterminated string with everything after it), and the
    brackets left are counted, a chunk at a time; with `stop_above`, counting stops at the first
    chunk that goes deeper.
    """
    plain = _ESCAPE.sub(b"", body) if b"\\" in body else body
    structure = plain.translate(None, _NOT_STRUCTURE)
    outside = _QUOTED.sub(b"", structure).split(b'"', 1)[0]
    depth = deepest = 0
    for start in range(0, len(outside), _CHUNK):
        chunk = outside[start : start + _CHUNK]
        steps = map(_STEP.__getitem__, chunk)
        deepest = max(deepest, max(itertools.accumulate(steps, initial=depth)))
        if stop_above is not None and deepest > stop_above:
            break
        opened = chunk.count(b"[") + chunk.count(b"{")
        depth += opened - (len(chunk) - opened)
    return deepest


def check_json_body(body: bytes, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise InvalidArgument unless `body` is UTF-8 and nested at most `max_depth` levels."""
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidArgument(
                f"the request body is not valid UTF-8 (byte {exc.start}: {exc.reason})"
            ) from None
    # Cheap bound first: a body with few brackets cannot be nested deeper than their count.
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return
    if json_depth(body, stop_above=max_depth) > max_depth:
        raise InvalidArgument(
            f"the request body's JSON is nested more than {max_depth} levels deep"
        )


class GuardedRequest(Request[Any, Any, Any]):
    """Litestar's request, with `check_json_body` run before the body is decoded as JSON."""

    async def json(self) -> Any:
        body = await self.body()
        if len(body) > _INLINE_CHECK_BYTES:  # a big body: let other requests run meanwhile
            await asyncio.to_thread(check_json_body, body)
        else:
            check_json_body(body)
        try:
            return await super().json()
        except RecursionError:  # not reachable within the depth limit; kept a client error
            raise InvalidArgument("the request body's JSON is nested too deeply") from None
