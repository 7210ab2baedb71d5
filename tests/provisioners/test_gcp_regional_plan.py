"""Which GCP launches become one regional bulkInsert (provisioners.gcp_mapping, pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provisioners.gcp_mapping import RegionalLaunch, location_policy, regional_launch, zone_region

T4, A100 = "n1-standard-8/t4x1/spot", "a2-highgpu-1g/a100x1/spot"


@pytest.mark.parametrize(
    ("zone", "region"),
    [
        ("us-central1-a", "us-central1"),
        ("europe-west4-b", "europe-west4"),
        ("northamerica-northeast2-c", "northamerica-northeast2"),
        ("zone-a", None),
        ("us-central1", None),
        ("", None),
    ],
)
def test_zone_region(zone: str, region: str | None) -> None:
    assert zone_region(zone) == region


@pytest.mark.parametrize(
    ("choices", "expected"),
    [
        ([], None),
        ([(T4, "us-central1-a", 2)], None),
        (
            [(T4, "us-central1-a", 2), (T4, "us-central1-b", 2), (T4, "us-central1-c", 2)],
            RegionalLaunch("us-central1", ("us-central1-a", "us-central1-b", "us-central1-c"), 2),
        ),
        # another region ends the run: the zones are tried zone by zone
        ([(T4, "us-central1-a", 2), (T4, "us-east1-b", 2)], None),
        # a cheaper type ranked between two zones of the first is never skipped
        ([(T4, "us-central1-a", 2), (A100, "us-central1-a", 2), (T4, "us-central1-b", 2)], None),
        # a different count (budget or cap) is a different launch
        ([(T4, "us-central1-a", 2), (T4, "us-central1-b", 1)], None),
        ([(T4, "zone-a", 2), (T4, "zone-b", 2)], None),
        (
            [(T4, "us-central1-a", 4), (T4, "us-central1-a", 4), (T4, "us-central1-f", 4)],
            RegionalLaunch("us-central1", ("us-central1-a", "us-central1-f"), 4),
        ),
    ],
)
def test_regional_launch(choices, expected) -> None:
    assert regional_launch(choices) == expected


def test_location_policy_allows_exactly_the_zones_and_keeps_a_gang_in_one() -> None:
    assert location_policy(["us-central1-a", "us-central1-c"]) == {
        "locations": {
            "zones/us-central1-a": {"preference": "ALLOWED"},
            "zones/us-central1-c": {"preference": "ALLOWED"},
        },
        "targetShape": "ANY_SINGLE_ZONE",
    }


_zones = st.sampled_from(
    ["us-central1-a", "us-central1-b", "us-central1-c", "us-east1-b", "us-east1-c", "zone-a"]
)
_choices = st.lists(st.tuples(st.sampled_from([T4, A100]), _zones, st.integers(1, 3)))


@given(_choices)
def test_a_regional_launch_is_a_prefix_of_one_shape_in_one_region(choices) -> None:
    launch = regional_launch(choices)
    if launch is None:
        return
    shape, first_zone, count = choices[0]
    assert launch.zones[0] == first_zone and launch.count == count
    assert len(set(launch.zones)) == len(launch.zones) >= 2
    assert {zone_region(z) for z in launch.zones} == {launch.region}
    # every zone comes from the leading run of choices of the first one's shape and count
    run = []
    for choice in choices:
        if choice[0] != shape or choice[2] != count or zone_region(choice[1]) != launch.region:
            break
        run.append(choice[1])
    assert list(launch.zones) == list(dict.fromkeys(run))
