"""provisioners.gcp_compute's cluster-wide calls (det deploy gcp): list and delete by label."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from provisioners.gcp_compute import delete_instances, labelled_instances
from tests.support.fake_gce import FakeGCE

P = "proj"


@pytest.fixture
def gce() -> Iterator[FakeGCE]:
    with FakeGCE() as fake:
        fake.create_instance("m1", project=P, zone="z-a", labels={"c": "one", "role": "master"})
        fake.create_instance("a1", project=P, zone="z-a", labels={"c": "one"})
        fake.create_instance("a2", project=P, zone="z-b", labels={"c": "one"})
        fake.create_instance("x1", project=P, zone="z-a", labels={"c": "two"})
        fake.create_instance("o1", project="other", zone="z-a", labels={"c": "one"})
        yield fake


def _names(gce: FakeGCE, labels: dict[str, str], zone: str | None) -> list[tuple[str, str]]:
    found = labelled_instances(project=P, labels=labels, zone=zone, api_endpoint=gce.endpoint)
    return [(i.zone, i.name) for i in found]


def test_lists_by_labels_in_one_zone_or_every_zone(gce: FakeGCE) -> None:
    assert _names(gce, {"c": "one"}, "z-a") == [("z-a", "a1"), ("z-a", "m1")]
    assert _names(gce, {"c": "one"}, None) == [("z-a", "a1"), ("z-a", "m1"), ("z-b", "a2")]
    assert _names(gce, {"c": "one", "role": "master"}, None) == [("z-a", "m1")]
    assert _names(gce, {"c": "three"}, None) == []


def test_deletes_in_each_instances_zone_and_skips_what_is_already_going(gce: FakeGCE) -> None:
    found = labelled_instances(project=P, labels={"c": "one"}, api_endpoint=gce.endpoint)
    delete_instances(project=P, instances=found, api_endpoint=gce.endpoint)
    deletes = sorted(r.path for r in gce.requests if r.method == "DELETE")
    assert deletes == [
        "/compute/v1/projects/proj/zones/z-a/instances/a1",
        "/compute/v1/projects/proj/zones/z-a/instances/m1",
        "/compute/v1/projects/proj/zones/z-b/instances/a2",
    ]
    going = labelled_instances(project=P, labels={"c": "one"}, api_endpoint=gce.endpoint)
    assert {i.status for i in going} == {"STOPPING"}
    delete_instances(project=P, instances=going, api_endpoint=gce.endpoint)
    assert len([r for r in gce.requests if r.method == "DELETE"]) == 3
    assert _names(gce, {"c": "one"}, None) == []


def test_deleting_an_instance_that_vanished_meanwhile_is_no_error(gce: FakeGCE) -> None:
    found = labelled_instances(project=P, labels={"c": "two"}, api_endpoint=gce.endpoint)
    gce.remove_instance("x1")
    delete_instances(project=P, instances=found, api_endpoint=gce.endpoint)
    assert [r.path for r in gce.requests if r.method == "DELETE"] == [
        "/compute/v1/projects/proj/zones/z-a/instances/x1"
    ]
