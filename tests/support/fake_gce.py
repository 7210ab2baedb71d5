"""A fake of the GCE Compute REST API (compute/v1), over plain HTTP on 127.0.0.1.

It answers what the real google-cloud-compute client sends for the GCP provisioner (REST
transport, `api_endpoint="http://127.0.0.1:<port>"`, anonymous credentials):

* ``POST …/zones/{z}/instances`` (insert) and ``POST …/zones/{z}/instances/bulkInsert``
  (``count``, ``minCount``, ``namePattern`` whose run of ``#`` becomes 1, 2, … zero-padded,
  skipping names in use), both idempotent by ``requestId``: a repeated id gets the first call's
  operation back and creates nothing;
* ``GET /compute/v1/projects/{p}/aggregated/instances`` (aggregatedList, the same filters);
* ``GET …/instances`` with ``filter`` applied (``labels.k=v``, ``name=…``, ``status=…``, ``!=``,
  parenthesised terms joined by ``AND``) and paging (``maxResults`` / ``pageToken``);
* ``GET`` / ``DELETE …/instances/{name}`` (404 ``notFound`` when missing);
* ``GET …/zones/{z}/operations/{op}`` and ``POST …/operations/{op}/wait``;
* ``POST …/regions/{r}/instances/bulkInsert`` with a ``locationPolicy`` (zones of the region,
  ``targetShape: ANY_SINGLE_ZONE``): every instance lands in the first allowed zone, by name,
  that is not in ``exhausted_zones`` and has ``capacity``; when none has, the operation ends
  with the last zone's error; a zonal disk type URL in it is a 400; its operation is polled at
  ``…/regions/{r}/operations/{op}``.

Like GCE, a launch's problems come back on the operation (``error.errors[].code``), not as an
HTTP error, and requests GCE would reject (bad names, label values, a machine type given as a
URL in instanceProperties) get a 400 ``invalid``. Instances start PROVISIONING and move one step
(STAGING, RUNNING) per listing; a deleted instance is listed once as STOPPING, then is gone.
Operations are RUNNING for ``polls_to_done - 1`` polls, then DONE (``wait`` finishes them).

Test backdoors: ``set_status``, ``create_instance``, ``fail_next_insert`` (an operation error
such as ZONE_RESOURCE_POOL_EXHAUSTED), ``exhausted_zones`` (zone → the error every launch
there ends with), ``fail_next_call`` (an HTTP error), ``capacity`` (at most
that many more instances), ``stall_operations``, ``instances()``, ``bulk_inserts`` (request
bodies as sent), ``regional_bulk_inserts`` ((region, allowed zones) of each regional call) and
``requests`` (every call).
"""

from __future__ import annotations

import copy
import functools
import itertools
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from typing import Any

from tests.support.fake_gce_wire import (
    LABEL_KEY,
    LABEL_VALUE,
    GceError,
    OperationError,
    WireHandler,
    check_name,
    fail_operation,
    parse_filter,
    policy_zones,
    request_id_of,
)

API = "https://www.googleapis.com/compute/v1"
_PREFIX = r"^/compute/v1/projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)"
_REGION = r"^/compute/v1/projects/(?P<project>[^/]+)/regions/(?P<region>[^/]+)"
_AGGREGATED = r"^/compute/v1/projects/(?P<project>[^/]+)/aggregated/instances$"
_NEXT_STATUS = {"PROVISIONING": "STAGING", "STAGING": "RUNNING"}


@dataclass(frozen=True)
class FakeRequest:
    method: str
    path: str
    query: dict[str, str]
    body: dict[str, Any] | None


class FakeGCE:
    """The fake's state; ``start()`` (or ``with FakeGCE() as gce``) serves it in a thread."""

    def __init__(
        self,
        *,
        polls_to_done: int = 2,
        page_size: int = 500,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.polls_to_done = polls_to_done
        self.page_size = page_size
        self.clock = clock
        self.capacity: int | None = None
        # zone -> the operation error every launch there ends with (a stockout in one zone)
        self.exhausted_zones: dict[str, str] = {}
        self.stall_operations = False
        self.requests: list[FakeRequest] = []
        self.bulk_inserts: list[dict[str, Any]] = []
        # (region, zones its location policy allowed) of each regional bulkInsert
        self.regional_bulk_inserts: list[tuple[str, list[str]]] = []
        self.lock = threading.RLock()
        self._instances: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._deleting: set[tuple[str, str, str]] = set()
        self._operations: dict[str, dict[str, Any]] = {}
        self._polls: dict[str, int] = {}
        self._by_request_id: dict[str, str] = {}
        self._insert_failures: list[tuple[str, str]] = []
        self._call_failures: list[tuple[str | None, GceError]] = []
        self._ids = itertools.count(4_000_000_000_001)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """The ``api_endpoint`` a client points at: ``http://127.0.0.1:<port>``."""
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeGCE:
        fake = self

        class Handler(WireHandler):
            state = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeGCE:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- backdoors ---------------------------------------------------------------------------

    def instances(self) -> list[dict[str, Any]]:
        """Every instance as stored (copies), deleted-but-still-listed ones included."""
        with self.lock:
            return [copy.deepcopy(i) for i in self._instances.values()]

    def instance(self, name: str) -> dict[str, Any]:
        with self.lock:
            return copy.deepcopy(self._find(name))

    def set_status(self, name: str, status: str) -> None:
        """Force an instance's status, e.g. TERMINATED for a preempted VM, RUNNING to skip boot."""
        with self.lock:
            self._find(name)["status"] = status

    def create_instance(
        self,
        name: str,
        *,
        project: str = "proj",
        zone: str = "zone-a",
        labels: dict[str, str] | None = None,
        status: str = "RUNNING",
    ) -> None:
        """An instance made outside the provisioner (another pool's, an unlabelled one)."""
        with self.lock:
            self._create(project, zone, {"name": name, "labels": labels or {}}, status)

    def remove_instance(self, name: str) -> None:
        """The instance vanishes at once (deleted behind the provisioner's back)."""
        with self.lock:
            self._instances.pop(self._key(name), None)

    def fail_next_insert(
        self, reason: str = "ZONE_RESOURCE_POOL_EXHAUSTED", message: str = ""
    ) -> None:
        """The next insert/bulkInsert is accepted, and its operation ends DONE with this error."""
        with self.lock:
            self._insert_failures.append((reason, message or f"{reason} (fake)"))

    def fail_next_call(
        self, status: int, reason: str, message: str = "", *, method: str | None = None
    ) -> None:
        """The next call (of `method`, if given) is answered with an HTTP error."""
        with self.lock:
            error = GceError(status, reason, message or f"{reason} (fake)")
            self._call_failures.append((method, error))

    def request_count(self, method: str, path_suffix: str = "") -> int:
        return sum(1 for r in self.requests if r.method == method and r.path.endswith(path_suffix))

    # -- the API -----------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: dict[str, str], body: Any) -> dict[str, Any]:
        with self.lock:
            self.requests.append(FakeRequest(method, path, query, body))
            for i, (only, error) in enumerate(self._call_failures):
                if only in (None, method):
                    del self._call_failures[i]
                    raise error
            routes: list[tuple[str, str, Callable[..., dict[str, Any]]]] = [
                ("POST", r"/instances", self._insert),
                ("POST", r"/instances/bulkInsert", self._bulk_insert),
                ("GET", r"/instances", self._list),
                ("GET", r"/instances/(?P<name>[^/]+)", self._get),
                ("DELETE", r"/instances/(?P<name>[^/]+)", self._delete),
                ("GET", r"/operations/(?P<op>[^/]+)", self._get_operation),
                ("POST", r"/operations/(?P<op>[^/]+)/wait", self._wait_operation),
            ]
            aggregated = re.match(_AGGREGATED, path)
            if aggregated and method == "GET":
                return self._aggregated(aggregated["project"], query)
            regional: list[tuple[str, str, Callable[..., dict[str, Any]]]] = [
                ("POST", r"/instances/bulkInsert", self._regional_bulk_insert),
                ("GET", r"/operations/(?P<op>[^/]+)", self._get_region_operation),
                ("POST", r"/operations/(?P<op>[^/]+)/wait", self._wait_region_operation),
            ]
            for verb, pattern, handler in regional:
                match = re.match(_REGION + pattern + "$", path)
                if verb == method and match:
                    return handler(query=query, body=body, **match.groupdict())
            for verb, pattern, handler in routes:
                match = re.match(_PREFIX + pattern + "$", path)
                if verb == method and match:
                    return handler(query=query, body=body, **match.groupdict())
            raise GceError(404, "notFound", f"no such method: {method} {path}")

    def _insert(self, project: str, zone: str, query: dict[str, str], body: Any) -> dict[str, Any]:
        def create() -> tuple[list[str], int]:
            name = body.get("name", "")
            if (project, zone, name) in self._instances:
                raise GceError(409, "alreadyExists", f"The resource '{name}' already exists")
            self._check_properties(body, template=False)
            check_name(name)
            return [name], 1

        return self._launch(project, zone, query, "insert", body.get("name", ""), body, create)

    def _bulk_insert(
        self, project: str, zone: str, query: dict[str, str], body: Any
    ) -> dict[str, Any]:
        self.bulk_inserts.append(copy.deepcopy(body))
        create = functools.partial(self._create_bulk, project, zone, body)
        return self._launch(project, zone, query, "bulkInsert", "", body, create)

    def _create_bulk(
        self, project: str, zone: str, body: dict[str, Any], *, regional: bool = False
    ) -> tuple[list[str], int]:
        """The names a bulkInsert of `body` creates in `zone` (an OperationError when the zone
        cannot hold minCount), and how many it asked for."""
        count, min_count = int(body.get("count", 0)), int(body.get("minCount", 1))
        pattern = body.get("namePattern", "")
        if count < 1 or not 1 <= min_count <= count:
            raise GceError(400, "invalid", f"Invalid count {count} / minCount {min_count}")
        hashes = re.findall(r"#+", pattern)
        if len(hashes) != 1:
            raise GceError(400, "invalid", f"Invalid value for field 'namePattern': {pattern}")
        properties = body.get("instanceProperties") or {}
        self._check_properties(properties, template=True, regional=regional)
        if zone in self.exhausted_zones:
            code = self.exhausted_zones[zone]
            raise OperationError(code, f"The zone '{zone}' does not have enough resources")
        if self.capacity is not None and self.capacity < min_count:
            raise OperationError("ZONE_RESOURCE_POOL_EXHAUSTED", "no capacity (fake)")
        wanted = count if self.capacity is None else min(count, self.capacity)
        names: list[str] = []
        for n in itertools.count(1):
            if len(names) == wanted:
                break
            name = pattern.replace(hashes[0], str(n).zfill(len(hashes[0])))
            check_name(name)
            if (project, zone, name) not in self._instances and name not in names:
                names.append(name)
        return names, count

    def _regional_bulk_insert(
        self, project: str, region: str, query: dict[str, str], body: Any
    ) -> dict[str, Any]:
        """regionInstances.bulkInsert: the first zone of the location policy (by name) that
        can hold the launch gets all of it (targetShape ANY_SINGLE_ZONE); when none can,
        the operation ends with the last zone's error."""
        self.bulk_inserts.append(copy.deepcopy(body))
        zones = policy_zones(region, body.get("locationPolicy"))
        self.regional_bulk_inserts.append((region, zones))

        def create() -> tuple[list[str], int, str]:
            refusals: list[OperationError] = []
            for zone in zones:
                try:
                    names, count = self._create_bulk(project, zone, body, regional=True)
                except OperationError as refused:
                    refusals.append(refused)
                    continue
                return names, count, zone
            last = refusals[-1]
            tried = ", ".join(zones)
            raise OperationError(last.code, f"{last.message} (zones tried: {tried})")

        return self._launch_regional(project, region, query, body, create)

    def _launch_regional(
        self,
        project: str,
        region: str,
        query: dict[str, str],
        body: dict[str, Any],
        create: Callable[[], tuple[list[str], int, str]],
    ) -> dict[str, Any]:
        request_id = request_id_of(query)
        if request_id is not None and request_id in self._by_request_id:
            return self._public(self._operations[self._by_request_id[request_id]])
        operation = self._new_operation(project, "", "bulkInsert", "", region=region)
        if request_id is not None:
            self._by_request_id[request_id] = operation["name"]
        try:
            if self._insert_failures:
                raise OperationError(*self._insert_failures.pop(0))
            names, wanted, zone = create()
        except OperationError as failure:
            fail_operation(operation, failure)
            return self._public(operation)
        except GceError:
            del self._operations[operation["name"]]
            self._by_request_id.pop(request_id or "", None)
            raise
        properties = body.get("instanceProperties", {})
        for name in names:
            self._create(project, zone, dict(copy.deepcopy(properties), name=name), "PROVISIONING")
        status = {"createdVmCount": len(names), "targetVmCount": wanted}
        status["failedToCreateVmCount"] = wanted - len(names)
        metadata = {"perLocationStatus": {f"zones/{zone}": status}}
        operation["instancesBulkInsertOperationMetadata"] = metadata
        return self._public(operation)

    def _launch(
        self,
        project: str,
        zone: str,
        query: dict[str, str],
        kind: str,
        target: str,
        body: dict[str, Any],
        create: Callable[[], tuple[list[str], int]],
    ) -> dict[str, Any]:
        request_id = request_id_of(query)
        if request_id is not None and request_id in self._by_request_id:
            return self._public(self._operations[self._by_request_id[request_id]])
        operation = self._new_operation(project, zone, kind, target)
        if request_id is not None:
            self._by_request_id[request_id] = operation["name"]
        try:
            if self._insert_failures:
                raise OperationError(*self._insert_failures.pop(0))
            if zone in self.exhausted_zones:
                code = self.exhausted_zones[zone]
                raise OperationError(code, f"The zone '{zone}' does not have enough resources")
            names, wanted = create()
        except OperationError as failure:
            fail_operation(operation, failure)
            names, wanted = [], 0
        except GceError:
            del self._operations[operation["name"]]
            self._by_request_id.pop(request_id or "", None)
            raise
        properties = body.get("instanceProperties", body)
        for name in names:
            self._create(project, zone, dict(copy.deepcopy(properties), name=name), "PROVISIONING")
        if kind == "bulkInsert":
            status = {"createdVmCount": len(names), "targetVmCount": wanted}
            status["failedToCreateVmCount"] = wanted - len(names)
            per_location = {f"zones/{zone}": status}
            operation["instancesBulkInsertOperationMetadata"] = {"perLocationStatus": per_location}
        return self._public(operation)

    def _list(self, project: str, zone: str, query: dict[str, str], body: Any) -> dict[str, Any]:
        matches = parse_filter(query.get("filter", ""))
        items = []
        for key in sorted(self._instances):
            if key[:2] != (project, zone):
                continue
            instance = self._instances[key]
            if all(m(instance) for m in matches):
                items.append(copy.deepcopy(instance))
            self._tick(key)
        start = int(query.get("pageToken") or 0)
        size = min(int(query.get("maxResults") or self.page_size), self.page_size)
        answer: dict[str, Any] = {
            "kind": "compute#instanceList",
            "id": f"projects/{project}/zones/{zone}/instances",
            "items": items[start : start + size],
            "selfLink": f"{API}/projects/{project}/zones/{zone}/instances",
        }
        if start + size < len(items):
            answer["nextPageToken"] = str(start + size)
        return answer

    def _aggregated(self, project: str, query: dict[str, str]) -> dict[str, Any]:
        """instances.aggregatedList: every zone's matches, in one page, grouped by zone."""
        matches = parse_filter(query.get("filter", ""))
        items: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for key in sorted(self._instances):
            if key[0] != project:
                continue
            instance = self._instances[key]
            if all(m(instance) for m in matches):
                scope = items.setdefault(f"zones/{key[1]}", {"instances": []})
                scope["instances"].append(copy.deepcopy(instance))
            self._tick(key)
        return {
            "kind": "compute#instanceAggregatedList",
            "id": f"projects/{project}/aggregated/instances",
            "items": items,
            "selfLink": f"{API}/projects/{project}/aggregated/instances",
        }

    def _get(
        self, project: str, zone: str, name: str, query: dict[str, str], body: Any
    ) -> dict[str, Any]:
        return copy.deepcopy(self._existing(project, zone, name))

    def _delete(
        self, project: str, zone: str, name: str, query: dict[str, str], body: Any
    ) -> dict[str, Any]:
        instance = self._existing(project, zone, name)
        instance["status"] = "STOPPING"
        self._deleting.add((project, zone, name))
        operation = self._new_operation(project, zone, "delete", name)
        return self._public(operation)

    def _get_operation(
        self, project: str, zone: str, op: str, query: dict[str, str], body: Any
    ) -> dict[str, Any]:
        operation = self._operation(op)
        self._polls[op] += 1
        if self._polls[op] >= self.polls_to_done:
            self._finish(operation)
        return self._public(operation)

    def _wait_operation(
        self, project: str, zone: str, op: str, query: dict[str, str], body: Any
    ) -> dict[str, Any]:
        operation = self._operation(op)
        self._finish(operation)
        return self._public(operation)

    def _get_region_operation(
        self, project: str, region: str, op: str, query: dict[str, str], body: Any
    ) -> dict[str, Any]:
        return self._get_operation(project, "", op, query, body)

    def _wait_region_operation(
        self, project: str, region: str, op: str, query: dict[str, str], body: Any
    ) -> dict[str, Any]:
        return self._wait_operation(project, "", op, query, body)

    # -- internals ---------------------------------------------------------------------------

    def _create(self, project: str, zone: str, fields: dict[str, Any], status: str) -> None:
        name = fields["name"]
        zone_link = f"{API}/projects/{project}/zones/{zone}"
        instance = dict(fields)
        if "machineType" in instance:
            # GCE answers the machine type as a URL, whatever form it was given in.
            machine_type = instance["machineType"].rsplit("/", 1)[-1]
            instance["machineType"] = f"{zone_link}/machineTypes/{machine_type}"
        for interface in instance.get("networkInterfaces", []):
            interface.setdefault("networkIP", f"10.128.0.{len(self._instances) % 250 + 2}")
        instance.update(
            kind="compute#instance",
            id=str(next(self._ids)),
            status=status,
            zone=zone_link,
            selfLink=f"{zone_link}/instances/{name}",
            creationTimestamp=self.clock().isoformat(timespec="milliseconds"),
        )
        self._instances[(project, zone, name)] = instance

    def _tick(self, key: tuple[str, str, str]) -> None:
        if key in self._deleting:
            self._deleting.discard(key)
            self._instances.pop(key, None)
            return
        instance = self._instances[key]
        instance["status"] = _NEXT_STATUS.get(instance["status"], instance["status"])

    def _new_operation(
        self, project: str, zone: str, kind: str, target: str, *, region: str = ""
    ) -> dict[str, Any]:
        # A regional operation names its region where a zonal one names its zone.
        scope = f"regions/{region}" if region else f"zones/{zone}"
        zone_link = f"{API}/projects/{project}/{scope}"
        name = f"operation-{next(self._ids)}-{uuid.uuid4().hex[:12]}"
        now = self.clock().isoformat(timespec="milliseconds")
        operation = {
            "kind": "compute#operation",
            "id": str(next(self._ids)),
            "name": name,
            "region" if region else "zone": zone_link,
            "operationType": kind,
            "targetLink": f"{zone_link}/instances/{target}" if target else zone_link,
            "status": "RUNNING",
            "progress": 0,
            "insertTime": now,
            "startTime": now,
            "user": "fake@example.com",
            "selfLink": f"{zone_link}/operations/{name}",
            "_deletes": (project, zone, target) if kind == "delete" else None,
        }
        self._operations[name] = operation
        self._polls[name] = 0
        return operation

    def _finish(self, operation: dict[str, Any]) -> None:
        if self.stall_operations or operation["status"] == "DONE":
            return
        operation.update(status="DONE", progress=100)
        operation["endTime"] = self.clock().isoformat(timespec="milliseconds")
        if operation["_deletes"] in self._deleting:
            self._deleting.discard(operation["_deletes"])
            self._instances.pop(operation["_deletes"], None)

    def _operation(self, name: str) -> dict[str, Any]:
        if name not in self._operations:
            raise GceError(404, "notFound", f"The resource 'operations/{name}' was not found")
        return self._operations[name]

    def _existing(self, project: str, zone: str, name: str) -> dict[str, Any]:
        instance = self._instances.get((project, zone, name))
        if instance is None:
            message = (
                f"The resource 'projects/{project}/zones/{zone}/instances/{name}' was not found"
            )
            raise GceError(404, "notFound", message)
        return instance

    def _key(self, name: str) -> tuple[str, str, str]:
        keys = [k for k in self._instances if k[2] == name]
        if len(keys) != 1:
            raise KeyError(f"{len(keys)} instances named {name!r}")
        return keys[0]

    def _find(self, name: str) -> dict[str, Any]:
        return self._instances[self._key(name)]

    @staticmethod
    def _public(operation: dict[str, Any]) -> dict[str, Any]:
        return {k: copy.deepcopy(v) for k, v in operation.items() if not k.startswith("_")}

    @staticmethod
    def _check_properties(
        properties: dict[str, Any], *, template: bool, regional: bool = False
    ) -> None:
        machine_type = properties.get("machineType", "")
        # instanceProperties take a machine type name only; GCE fails a URL there.
        if not machine_type or (template and "/" in machine_type):
            raise GceError(
                400, "invalid", f"Invalid value for field 'machineType': '{machine_type}'"
            )
        if regional:
            # A regional launch has no zone to resolve a zonal disk type URL in.
            for disk in properties.get("disks") or []:
                disk_type = (disk.get("initializeParams") or {}).get("diskType", "")
                if "/" in disk_type:
                    message = f"Invalid value for field 'diskType': '{disk_type}'"
                    raise GceError(400, "invalid", message)
        for key, value in (properties.get("labels") or {}).items():
            if not LABEL_KEY.match(key) or not LABEL_VALUE.match(str(value)):
                raise GceError(400, "invalid", f"Invalid value for field 'labels': {key}={value}")
