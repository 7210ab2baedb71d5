"""A fake of the GCS JSON API, over plain HTTP on 127.0.0.1, for the real google-cloud-storage.

Point the client at it with ``STORAGE_EMULATOR_HOST=http://127.0.0.1:<port>`` (the client then
uses anonymous credentials). It implements what the client calls for checkpoints:

* ``GET /storage/v1/b/{bucket}`` (bucket get), ``POST /storage/v1/b`` (bucket insert; the
  request body is kept in ``bucket_settings``) and ``DELETE /storage/v1/b/{bucket}`` (409 unless
  empty)
* ``POST /upload/storage/v1/b/{bucket}/o?uploadType=media|multipart|resumable`` and ``PUT`` on
  the resumable session URL (``Content-Range`` chunks, 308 with ``Range`` until complete);
  ``ifGenerationMatch=0`` is honoured (412 when the object exists)
* ``GET /storage/v1/b/{bucket}/o`` (list: ``prefix``, ``maxResults``, ``pageToken``)
* ``GET /storage/v1/b/{bucket}/o/{object}`` (metadata) and ``?alt=media`` downloads (also under
  ``/download/storage/v1/...``), with ``Range``
* ``DELETE /storage/v1/b/{bucket}/o/{object}``

Objects are kept in memory with their md5 and crc32c (the client checks them). Faults for
tests: ``fail_next(n, status)`` answers the next n requests with ``status``;
``refuse_all = 401`` refuses every request as unauthenticated.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import urllib.parse
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import google_crc32c


@dataclass
class FakeObject:
    data: bytes
    generation: int
    content_type: str = "application/octet-stream"


@dataclass
class Upload:
    bucket: str
    name: str
    if_generation_match: int | None
    data: bytearray = field(default_factory=bytearray)


class FakeGCS:
    """The server's state; ``start()`` serves it on 127.0.0.1 in a thread."""

    def __init__(self, page_size: int = 1000) -> None:
        self.buckets: dict[str, dict[str, FakeObject]] = {}
        self.uploads: dict[str, Upload] = {}
        self.page_size = page_size
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []
        self._failures: list[int] = []
        self.refuse_all: int | None = None
        self.bucket_settings: dict[str, dict[str, Any]] = {}
        self._generation = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeGCS:
        fake = self

        class Handler(_Handler):
            state = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def create_bucket(self, name: str) -> None:
        with self.lock:
            self.buckets.setdefault(name, {})

    def fail_next(self, n: int, status: int = 500) -> None:
        with self.lock:
            self._failures.extend([status] * n)

    def put(self, bucket: str, name: str, data: bytes) -> None:
        with self.lock:
            self._store(bucket, name, data, "application/octet-stream")

    def names(self, bucket: str) -> list[str]:
        with self.lock:
            return sorted(self.buckets.get(bucket, {}))

    # -- internals (called with the lock held) -----------------------------------------------

    def _store(self, bucket: str, name: str, data: bytes, content_type: str) -> FakeObject:
        self._generation += 1
        obj = FakeObject(bytes(data), self._generation, content_type)
        self.buckets[bucket][name] = obj
        return obj

    def _next_failure(self) -> int | None:
        if self.refuse_all is not None:
            return self.refuse_all
        return self._failures.pop(0) if self._failures else None


def resource(bucket: str, name: str, obj: FakeObject) -> dict[str, Any]:
    crc = google_crc32c.Checksum(obj.data).digest()
    return {
        "kind": "storage#object",
        "id": f"{bucket}/{name}/{obj.generation}",
        "name": name,
        "bucket": bucket,
        "generation": str(obj.generation),
        "metageneration": "1",
        "contentType": obj.content_type,
        "size": str(len(obj.data)),
        "md5Hash": base64.b64encode(hashlib.md5(obj.data).digest()).decode(),
        "crc32c": base64.b64encode(crc).decode(),
        "storageClass": "STANDARD",
        "timeCreated": "2026-01-01T00:00:00.000Z",
        "updated": "2026-01-01T00:00:00.000Z",
    }


OBJECT_PATH = re.compile(r"^(?:/download)?/storage/v1/b/([^/]+)/o/(.+)$")
LIST_PATH = re.compile(r"^/storage/v1/b/([^/]+)/o$")
BUCKET_PATH = re.compile(r"^/storage/v1/b/([^/]+)$")
UPLOAD_PATH = re.compile(r"^/upload/storage/v1/b/([^/]+)/o$")
RANGE = re.compile(r"bytes=(\d*)-(\d*)$")
CONTENT_RANGE = re.compile(r"bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)$")


class _Handler(BaseHTTPRequestHandler):
    state: FakeGCS
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    # -- plumbing ----------------------------------------------------------------------------

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        h = {"Content-Type": "application/json; charset=UTF-8", **(headers or {})}
        self._send(status, json.dumps(doc).encode(), h)

    def _error(self, status: int, message: str, reason: str = "error") -> None:
        errors = [{"message": message, "reason": reason}]
        err = {"code": status, "message": message, "errors": errors}
        self._json(status, {"error": err})

    def _route(self) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        body = self._body()
        with self.state.lock:
            self.state.requests.append((self.command, self.path))
            failure = self.state._next_failure()
        if failure is not None:
            self._error(failure, f"injected failure {failure}", "backendError")
            return
        path = parsed.path
        m = UPLOAD_PATH.match(path)
        if m and self.command == "POST":
            return self._upload_start(m.group(1), query, body)
        if m and self.command == "PUT":
            return self._upload_chunk(query.get("upload_id", ""), body)
        m = LIST_PATH.match(path)
        if m and self.command == "GET":
            return self._list(m.group(1), query)
        m = OBJECT_PATH.match(path)
        if m:
            bucket, name = m.group(1), urllib.parse.unquote(m.group(2))
            if self.command in ("GET", "HEAD"):
                media = query.get("alt") == "media" or path.startswith("/download/")
                return self._get(bucket, name, media)
            if self.command == "DELETE":
                return self._delete(bucket, name)
        if path == "/storage/v1/b" and self.command == "POST":
            return self._insert_bucket(json.loads(body or b"{}"))
        m = BUCKET_PATH.match(path)
        if m and self.command == "DELETE":
            return self._delete_bucket(m.group(1))
        if m and self.command == "GET":
            with self.state.lock:
                exists = m.group(1) in self.state.buckets
            if not exists:
                return self._error(404, f"bucket {m.group(1)} not found", "notFound")
            return self._json(200, {"kind": "storage#bucket", "name": m.group(1), "id": m.group(1)})
        self._error(404, f"no route for {self.command} {path}", "notFound")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _route

    # -- operations --------------------------------------------------------------------------

    def _insert_bucket(self, settings: dict[str, Any]) -> None:
        name = settings.get("name", "")
        with self.state.lock:
            exists = name in self.state.buckets
            if not exists:
                self.state.buckets[name] = {}
                self.state.bucket_settings[name] = settings
        if exists:
            return self._error(409, f"bucket {name} already exists", "conflict")
        self._json(200, {"kind": "storage#bucket", "id": name, **settings})

    def _delete_bucket(self, bucket: str) -> None:
        with self.state.lock:
            objects = self.state.buckets.get(bucket)
            if objects is not None and not objects:
                del self.state.buckets[bucket]
        if objects is None:
            return self._error(404, f"bucket {bucket} not found", "notFound")
        if objects:
            return self._error(409, f"The bucket you tried to delete is not empty: {bucket}")
        self._send(204)

    def _bucket_missing(self, bucket: str) -> bool:
        with self.state.lock:
            missing = bucket not in self.state.buckets
        if missing:
            self._error(404, f"The specified bucket does not exist: {bucket}", "notFound")
        return missing

    def _finish(self, bucket: str, name: str, data: bytes, igm: int | None, ctype: str) -> None:
        with self.state.lock:
            objects = self.state.buckets.get(bucket)
            if objects is None:
                missing = True
            else:
                missing = False
                if igm is not None and (
                    (igm == 0 and name in objects)
                    or (igm != 0 and (name not in objects or objects[name].generation != igm))
                ):
                    conflict = True
                else:
                    conflict = False
                    obj = self.state._store(bucket, name, data, ctype)
        if missing:
            return self._error(404, f"The specified bucket does not exist: {bucket}", "notFound")
        if conflict:
            return self._error(412, "At least one of the pre-conditions did not hold.")
        self._json(200, resource(bucket, name, obj))

    def _upload_start(self, bucket: str, query: dict[str, str], body: bytes) -> None:
        kind = query.get("uploadType")
        igm_raw = query.get("ifGenerationMatch")
        igm = int(igm_raw) if igm_raw not in (None, "") else None
        ctype = "application/octet-stream"
        if kind == "media":
            name = query.get("name", "")
            return self._finish(bucket, name, body, igm, self.headers.get("Content-Type", ctype))
        if kind == "multipart":
            meta, data, ctype = _split_multipart(self.headers.get("Content-Type", ""), body)
            return self._finish(bucket, meta.get("name") or query.get("name", ""), data, igm, ctype)
        if kind == "resumable":
            if self._bucket_missing(bucket):
                return None
            meta = json.loads(body or b"{}")
            upload_id = uuid.uuid4().hex
            with self.state.lock:
                self.state.uploads[upload_id] = Upload(
                    bucket, meta.get("name") or query.get("name", ""), igm
                )
            host, port = self.server.server_address[:2]
            location = (
                f"http://{host}:{port}/upload/storage/v1/b/{bucket}/o"
                f"?uploadType=resumable&upload_id={upload_id}"
            )
            return self._send(200, b"", {"Location": location})
        self._error(400, f"uploadType {kind!r} not supported")

    def _upload_chunk(self, upload_id: str, body: bytes) -> None:
        with self.state.lock:
            up = self.state.uploads.get(upload_id)
        if up is None:
            return self._error(404, "no such upload session", "notFound")
        m = CONTENT_RANGE.match(self.headers.get("Content-Range", "bytes */*"))
        if not m:
            return self._error(400, "bad Content-Range")
        start, _end, total = m.groups()
        if start is not None:
            if int(start) != len(up.data):
                return self._error(400, f"chunk at {start}, expected {len(up.data)}")
            up.data.extend(body)
        if total != "*" and len(up.data) >= int(total):
            with self.state.lock:
                self.state.uploads.pop(upload_id, None)
            data, igm = bytes(up.data), up.if_generation_match
            return self._finish(up.bucket, up.name, data, igm, "application/octet-stream")
        headers = {"Range": f"bytes=0-{len(up.data) - 1}"} if up.data else {}
        self._send(308, b"", headers)

    def _list(self, bucket: str, query: dict[str, str]) -> None:
        if self._bucket_missing(bucket):
            return
        prefix = query.get("prefix", "")
        size = min(int(query.get("maxResults") or self.state.page_size), self.state.page_size)
        start = query.get("pageToken", "")
        with self.state.lock:
            objects = self.state.buckets[bucket]
            names = sorted(n for n in objects if n.startswith(prefix) and n > start)
            page = names[:size]
            items = [resource(bucket, n, objects[n]) for n in page]
        doc: dict[str, Any] = {"kind": "storage#objects", "items": items}
        if len(names) > size:
            doc["nextPageToken"] = page[-1]
        self._json(200, doc)

    def _get(self, bucket: str, name: str, media: bool) -> None:
        if self._bucket_missing(bucket):
            return None
        with self.state.lock:
            obj = self.state.buckets[bucket].get(name)
        if obj is None:
            return self._error(404, f"No such object: {bucket}/{name}", "notFound")
        if not media:
            return self._json(200, resource(bucket, name, obj))
        res = resource(bucket, name, obj)
        headers = {
            "Content-Type": obj.content_type,
            "x-goog-generation": str(obj.generation),
            "x-goog-hash": f"crc32c={res['crc32c']},md5={res['md5Hash']}",
            "x-goog-stored-content-length": str(len(obj.data)),
        }
        wanted = self.headers.get("Range")
        m = RANGE.match(wanted or "")
        if not m:
            return self._send(200, obj.data, headers)
        total = len(obj.data)
        first = int(m.group(1)) if m.group(1) else max(total - int(m.group(2)), 0)
        last = int(m.group(2)) if m.group(1) and m.group(2) else total - 1
        last = min(last, total - 1)
        if first >= total:
            return self._send(416, b"", {"Content-Range": f"bytes */{total}"})
        headers["Content-Range"] = f"bytes {first}-{last}/{total}"
        self._send(206, obj.data[first : last + 1], headers)

    def _delete(self, bucket: str, name: str) -> None:
        if self._bucket_missing(bucket):
            return None
        with self.state.lock:
            gone = self.state.buckets[bucket].pop(name, None)
        if gone is None:
            return self._error(404, f"No such object: {bucket}/{name}", "notFound")
        self._send(204)


def _split_multipart(content_type: str, body: bytes) -> tuple[dict[str, Any], bytes, str]:
    """(metadata, data, data content type) of a multipart/related upload body."""
    m = re.search(r'boundary="?([^";]+)"?', content_type)
    if not m:
        raise ValueError("multipart upload without a boundary")
    boundary = b"--" + m.group(1).encode()
    parts = [p for p in body.split(boundary) if p.strip(b"\r\n") not in (b"", b"--")]
    meta_part, data_part = parts[0], parts[1]
    _, meta_body = meta_part.lstrip(b"\r\n").split(b"\r\n\r\n", 1)
    data_headers, data = data_part.lstrip(b"\r\n").split(b"\r\n\r\n", 1)
    if data.endswith(b"\r\n"):
        data = data[:-2]
    ctype = "application/octet-stream"
    for line in data_headers.split(b"\r\n"):
        if line.lower().startswith(b"content-type:"):
            ctype = line.split(b":", 1)[1].strip().decode()
    return json.loads(meta_body.strip() or b"{}"), data, ctype
