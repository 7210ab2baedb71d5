"""The fake GCE answers what the real google-cloud-compute client expects (its contract).

Every test drives the fake through the real client library over plain HTTP, so a field the
client cannot parse, a status code it maps differently or a query it sends in another form
shows up here rather than as a puzzling provisioner failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from google.api_core import exceptions as api_exceptions
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1

from tests.support.fake_gce import FakeGCE

P, Z = "proj", "zone-a"
DONE = compute_v1.Operation.Status.DONE
RUNNING = compute_v1.Operation.Status.RUNNING
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def gce() -> Iterator[FakeGCE]:
    with FakeGCE(clock=lambda: NOW) as fake:
        yield fake


@pytest.fixture
def clients(
    gce: FakeGCE,
) -> tuple[compute_v1.InstancesClient, compute_v1.ZoneOperationsClient]:
    options = ClientOptions(api_endpoint=gce.endpoint)
    kwargs = {"credentials": AnonymousCredentials(), "client_options": options, "transport": "rest"}
    return compute_v1.InstancesClient(**kwargs), compute_v1.ZoneOperationsClient(**kwargs)


def _props(**labels: str) -> compute_v1.InstanceProperties:
    return compute_v1.InstanceProperties(machine_type="n1-standard-4", labels=labels)


def _bulk(
    instances: compute_v1.InstancesClient,
    count: int,
    pattern: str = "agent-#####",
    request_id: str | None = None,
    **labels: str,
) -> compute_v1.Operation:
    resource = compute_v1.BulkInsertInstanceResource(
        count=count, min_count=1, name_pattern=pattern, instance_properties=_props(**labels)
    )
    request = compute_v1.BulkInsertInstanceRequest(
        project=P, zone=Z, bulk_insert_instance_resource_resource=resource
    )
    if request_id is not None:
        request.request_id = request_id
    return instances.bulk_insert_unary(request=request)


def _names(instances: compute_v1.InstancesClient, flt: str = "") -> list[str]:
    request = compute_v1.ListInstancesRequest(project=P, zone=Z, filter=flt)
    return [i.name for i in instances.list(request=request)]


def test_bulk_insert_expands_the_name_pattern_and_the_operation_polls_to_done(
    gce: FakeGCE, clients
) -> None:
    instances, operations = clients
    op = _bulk(instances, 3, "agent-x-###")
    assert op.status == RUNNING and op.operation_type == "bulkInsert"
    assert op.zone.endswith(f"/zones/{Z}")
    op = operations.get(project=P, zone=Z, operation=op.name)
    assert op.status == RUNNING
    op = operations.get(project=P, zone=Z, operation=op.name)
    assert op.status == DONE and op.progress == 100
    status = op.instances_bulk_insert_operation_metadata.per_location_status[f"zones/{Z}"]
    assert (status.created_vm_count, status.target_vm_count) == (3, 3)
    assert _names(instances) == ["agent-x-001", "agent-x-002", "agent-x-003"]
    # Numbers in use are skipped by the next bulkInsert with the same pattern.
    _bulk(instances, 1, "agent-x-###")
    assert "agent-x-004" in _names(instances)


def test_get_answers_a_full_instance_and_404_is_not_found(gce: FakeGCE, clients) -> None:
    instances, _ = clients
    _bulk(instances, 1, env="e1")
    got = instances.get(project=P, zone=Z, instance="agent-00001")
    assert got.status == "PROVISIONING"
    assert got.machine_type.endswith(f"/zones/{Z}/machineTypes/n1-standard-4")
    assert got.labels == {"env": "e1"}
    assert datetime.fromisoformat(got.creation_timestamp) == NOW
    assert got.id > 0 and got.self_link.endswith("/instances/agent-00001")
    with pytest.raises(api_exceptions.NotFound):
        instances.get(project=P, zone=Z, instance="missing")


def test_insert_twice_is_a_conflict(clients) -> None:
    instances, operations = clients
    resource = compute_v1.Instance(name="one", machine_type=f"zones/{Z}/machineTypes/e2-small")
    op = instances.insert_unary(project=P, zone=Z, instance_resource=resource)
    assert operations.wait(project=P, zone=Z, operation=op.name).status == DONE
    with pytest.raises(api_exceptions.Conflict):
        instances.insert_unary(project=P, zone=Z, instance_resource=resource)


def test_the_same_request_id_answers_the_first_operation(gce: FakeGCE, clients) -> None:
    instances, _ = clients
    rid = "0b6f6c0c-65b4-4a43-9a8e-0f5cbd3c7a11"
    first = _bulk(instances, 2, "a-##", rid)
    again = _bulk(instances, 2, "b-##", rid)
    assert again.name == first.name
    assert _names(instances) == ["a-01", "a-02"]
    with pytest.raises(api_exceptions.BadRequest):
        _bulk(instances, 1, "c-##", "not-a-uuid")


def test_list_applies_the_label_filter_and_pages(gce: FakeGCE, clients) -> None:
    gce.page_size = 2
    instances, _ = clients
    _bulk(instances, 3, "mine-#", None, **{"managed-by": "m", "determined-resource-pool": "p1"})
    _bulk(instances, 2, "other-#", None, **{"managed-by": "m", "determined-resource-pool": "p2"})
    gce.create_instance("bare", project=P, zone=Z)
    gce.create_instance("elsewhere", project=P, zone="zone-b", labels={"managed-by": "m"})
    flt = "(labels.managed-by=m) AND (labels.determined-resource-pool=p1)"
    assert _names(instances, flt) == ["mine-1", "mine-2", "mine-3"]
    assert _names(instances, 'labels.determined-resource-pool != "p1"') == [
        "bare",
        "other-1",
        "other-2",
    ]
    assert len(_names(instances)) == 6
    pages = [r for r in gce.requests if r.method == "GET" and r.path.endswith("/instances")]
    assert any("pageToken" in r.query for r in pages)
    with pytest.raises(api_exceptions.BadRequest):
        _names(instances, "labels.x ~ y")


def test_status_advances_per_listing_and_set_status_overrides(gce: FakeGCE, clients) -> None:
    instances, _ = clients
    _bulk(instances, 1)

    def status() -> str:
        return next(iter(instances.list(project=P, zone=Z))).status

    assert [status(), status(), status(), status()] == [
        "PROVISIONING",
        "STAGING",
        "RUNNING",
        "RUNNING",
    ]
    gce.set_status("agent-00001", "TERMINATED")
    assert status() == "TERMINATED"


def test_delete_shows_stopping_once_then_the_instance_is_gone(gce: FakeGCE, clients) -> None:
    instances, operations = clients
    _bulk(instances, 2)
    op = instances.delete_unary(project=P, zone=Z, instance="agent-00001")
    assert op.operation_type == "delete" and op.target_link.endswith("/instances/agent-00001")
    listed = {i.name: i.status for i in instances.list(project=P, zone=Z)}
    assert listed["agent-00001"] == "STOPPING"
    assert _names(instances) == ["agent-00002"]
    with pytest.raises(api_exceptions.NotFound):
        instances.delete_unary(project=P, zone=Z, instance="agent-00001")
    # A delete whose operation completes removes the instance without a listing.
    op = instances.delete_unary(project=P, zone=Z, instance="agent-00002")
    operations.wait(project=P, zone=Z, operation=op.name)
    assert gce.instances() == []


def test_a_failed_insert_is_an_operation_error_as_gce_reports_it(gce: FakeGCE, clients) -> None:
    instances, operations = clients
    gce.fail_next_insert("ZONE_RESOURCE_POOL_EXHAUSTED")
    op = operations.wait(project=P, zone=Z, operation=_bulk(instances, 2).name)
    assert op.status == DONE
    assert op.error.errors[0].code == "ZONE_RESOURCE_POOL_EXHAUSTED"
    assert op.http_error_status_code == 503
    assert gce.instances() == []


def test_capacity_creates_fewer_or_fails_below_min_count(gce: FakeGCE, clients) -> None:
    instances, operations = clients
    gce.capacity = 2
    op = operations.wait(project=P, zone=Z, operation=_bulk(instances, 3).name)
    assert not op.error.errors
    assert len(gce.instances()) == 2
    gce.capacity = 0
    op = operations.wait(project=P, zone=Z, operation=_bulk(instances, 1).name)
    assert op.error.errors[0].code == "ZONE_RESOURCE_POOL_EXHAUSTED"


def test_http_errors_become_the_clients_exceptions(gce: FakeGCE, clients) -> None:
    instances, _ = clients
    gce.fail_next_call(403, "quotaExceeded", method="POST")
    with pytest.raises(api_exceptions.Forbidden) as refused:
        _bulk(instances, 1)
    assert refused.value.errors[0]["reason"] == "quotaExceeded"
    gce.fail_next_call(404, "notFound", method="GET")
    with pytest.raises(api_exceptions.NotFound):
        _names(instances)
    # The client retries a list on 503 by itself.
    gce.fail_next_call(503, "backendError")
    assert _names(instances) == []
    assert gce.request_count("GET", "/instances") == 3


def test_requests_gce_would_reject_are_400(gce: FakeGCE, clients) -> None:
    instances, _ = clients
    with pytest.raises(api_exceptions.BadRequest):
        _bulk(instances, 1, "Upper-#####")
    with pytest.raises(api_exceptions.BadRequest):
        _bulk(instances, 1, "agent-#####", None, host="10.0.0.1")
    url_type = compute_v1.InstanceProperties(machine_type=f"zones/{Z}/machineTypes/n1-standard-4")
    resource = compute_v1.BulkInsertInstanceResource(
        count=1, min_count=1, name_pattern="a-#", instance_properties=url_type
    )
    with pytest.raises(api_exceptions.BadRequest):
        instances.bulk_insert_unary(
            project=P, zone=Z, bulk_insert_instance_resource_resource=resource
        )
    assert gce.instances() == []


def test_stalled_operations_stay_running(gce: FakeGCE, clients) -> None:
    instances, operations = clients
    gce.stall_operations = True
    op = _bulk(instances, 1)
    for _ in range(3):
        op = operations.get(project=P, zone=Z, operation=op.name)
    assert op.status == RUNNING


def test_extended_operation_result_works_with_an_injected_operations_client(clients) -> None:
    instances, operations = clients
    # The library's hidden operations client would call compute.googleapis.com; this private
    # hook is for tests only (the provisioner polls with its own client instead).
    instances._transport._extended_operations_services["zone_operations"] = operations
    resource = compute_v1.Instance(name="ext", machine_type=f"zones/{Z}/machineTypes/e2-small")
    instances.insert(project=P, zone=Z, instance_resource=resource).result(timeout=10)
    assert _names(instances) == ["ext"]
