"""The fake GCE's regional bulkInsert (regionInstances.bulkInsert with a location policy),
driven through the real google-cloud-compute client like the rest of its contract."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from google.api_core import exceptions as api_exceptions
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1

from tests.support.fake_gce import FakeGCE

P, R = "proj", "us-central1"
DONE = compute_v1.Operation.Status.DONE


@pytest.fixture
def gce() -> Iterator[FakeGCE]:
    with FakeGCE(polls_to_done=1) as fake:
        yield fake


@pytest.fixture
def clients(
    gce: FakeGCE,
) -> tuple[compute_v1.RegionInstancesClient, compute_v1.RegionOperationsClient]:
    options = ClientOptions(api_endpoint=gce.endpoint)
    kwargs = {"credentials": AnonymousCredentials(), "client_options": options, "transport": "rest"}
    return compute_v1.RegionInstancesClient(**kwargs), compute_v1.RegionOperationsClient(**kwargs)


def _bulk(
    instances: compute_v1.RegionInstancesClient,
    zones: list[str],
    *,
    count: int = 3,
    shape: str = "ANY_SINGLE_ZONE",
    disk_type: str = "pd-standard",
    request_id: str | None = None,
) -> compute_v1.Operation:
    policy = {
        "locations": {f"zones/{z}": {"preference": "ALLOWED"} for z in zones},
        "targetShape": shape,
    }
    props = {
        "machineType": "n1-standard-4",
        "disks": [{"boot": True, "initializeParams": {"diskType": disk_type}}],
    }
    resource = compute_v1.BulkInsertInstanceResource(
        count=count,
        min_count=1,
        name_pattern="agent-#####",
        instance_properties=compute_v1.InstanceProperties.from_json(json.dumps(props)),
        location_policy=compute_v1.LocationPolicy.from_json(json.dumps(policy)),
    )
    request = compute_v1.BulkInsertRegionInstanceRequest(
        project=P, region=R, bulk_insert_instance_resource_resource=resource
    )
    if request_id is not None:
        request.request_id = request_id
    return instances.bulk_insert_unary(request=request)


def test_all_instances_land_in_the_first_zone_that_has_room(gce: FakeGCE, clients) -> None:
    instances, operations = clients
    gce.exhausted_zones["us-central1-a"] = "ZONE_RESOURCE_POOL_EXHAUSTED"
    op = _bulk(instances, ["us-central1-b", "us-central1-a", "us-central1-c"])
    assert op.region.endswith(f"/regions/{R}") and op.status != DONE
    op = operations.get(project=P, region=R, operation=op.name)
    assert op.status == DONE and not op.error.errors
    assert {i["zone"].rpartition("/")[2] for i in gce.instances()} == {"us-central1-b"}
    assert len(gce.instances()) == 3
    status = op.instances_bulk_insert_operation_metadata.per_location_status
    assert status["zones/us-central1-b"].created_vm_count == 3
    assert gce.regional_bulk_inserts == [(R, ["us-central1-a", "us-central1-b", "us-central1-c"])]


def test_no_zone_with_room_is_an_operation_error(gce: FakeGCE, clients) -> None:
    instances, operations = clients
    gce.exhausted_zones.update(
        {"us-central1-a": "ZONE_RESOURCE_POOL_EXHAUSTED", "us-central1-b": "QUOTA_EXCEEDED"}
    )
    op = operations.wait(
        project=P, region=R, operation=_bulk(instances, ["us-central1-a", "us-central1-b"]).name
    )
    assert op.status == DONE
    (error,) = op.error.errors
    assert error.code == "QUOTA_EXCEEDED" and "us-central1-a, us-central1-b" in error.message
    assert gce.instances() == []


def test_the_same_request_id_answers_the_first_operation(gce: FakeGCE, clients) -> None:
    instances, _ = clients
    rid = "5f1c4a52-4b7e-4f0c-9a57-1d0c2b8e6f11"
    first = _bulk(instances, ["us-central1-a", "us-central1-b"], request_id=rid)
    again = _bulk(instances, ["us-central1-a", "us-central1-b"], request_id=rid)
    assert first.name == again.name and len(gce.instances()) == 3


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"zones": ["us-east1-b"]}, "not in us-central1"),
        ({"zones": ["us-central1-a"], "shape": "BALANCED"}, "ANY_SINGLE_ZONE"),
        (
            {"zones": ["us-central1-a"], "disk_type": "projects/p/zones/z/diskTypes/pd-ssd"},
            "diskType",
        ),
        ({"zones": ["us-central1-a"], "count": 0}, "count"),
    ],
)
def test_requests_gce_or_the_fake_cannot_serve_are_400(
    gce: FakeGCE, clients, kwargs: dict, why: str
) -> None:
    instances, _ = clients
    with pytest.raises(api_exceptions.BadRequest, match=why):
        _bulk(instances, **kwargs)
    assert gce.instances() == []
