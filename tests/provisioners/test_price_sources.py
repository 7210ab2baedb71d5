"""Reading the clouds' price API answers into the price table (provisioners.price_sources)."""

from __future__ import annotations

import pytest

from provisioners.price_sources import (
    aws_on_demand_prices,
    aws_spot_prices,
    gcp_rates,
    refresh_table,
)
from provisioners.prices import price_table
from tests.support.fake_pricing import aws_item, gcp_sku


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (aws_item("g5.xlarge", 1.006), {"g5.xlarge": 1.006}),
        (aws_item("g5.xlarge", 1.2, operatingSystem="Windows"), {}),
        (aws_item("g5.xlarge", 1.2, tenancy="Dedicated"), {}),
        (aws_item("g5.xlarge", 1.2, preInstalledSw="SQL Std"), {}),
        (aws_item("g5.xlarge", 1.2, capacitystatus="UnusedCapacityReservation"), {}),
        (aws_item("g5.xlarge", 0.0), {}),  # a zero price is a placeholder, not a price
    ],
)
def test_aws_items_of_linux_shared_on_demand_only(item: str, expected: dict) -> None:
    assert aws_on_demand_prices([item]) == expected


def _spot(zone: str, price: str, stamp: str, instance_type: str = "g5.xlarge") -> dict:
    return {
        "AvailabilityZone": zone,
        "InstanceType": instance_type,
        "ProductDescription": "Linux/UNIX",
        "SpotPrice": price,
        "Timestamp": stamp,
    }


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([], {}),
        ([_spot("us-east-1a", "0.40", "2026-12-07T06:00:00Z")], {"g5.xlarge": 0.4}),
        # the newest price of each zone, averaged over the zones
        (
            [
                _spot("us-east-1a", "0.90", "2026-12-07T05:00:00Z"),
                _spot("us-east-1a", "0.40", "2026-12-07T06:00:00Z"),
                _spot("us-east-1b", "0.50", "2026-12-07T04:00:00Z"),
            ],
            {"g5.xlarge": 0.45},
        ),
        ([_spot("us-east-1a", "0", "t"), _spot("us-east-1b", "x", "t")], {}),
    ],
)
def test_aws_spot_prices(history: list, expected: dict) -> None:
    assert aws_spot_prices(history) == pytest.approx(expected)


T4 = "Nvidia Tesla T4 GPU running in Americas"
T4_SPOT = "Nvidia Tesla T4 GPU attached to Spot Preemptible VMs running in Americas"
A100_80 = "Nvidia Tesla A100 80GB GPU running in Americas"
CORE = "N1 Predefined Instance Core running in Americas"
RAM = "N1 Predefined Instance Ram running in Americas"
SKUS = [
    gcp_sku(T4, "GPU", 0.35),
    gcp_sku(T4_SPOT, "GPU", 0.11, usage="Preemptible"),
    gcp_sku(A100_80, "GPU", 3.93),
    gcp_sku(CORE, "N1Standard", 0.031611),
    gcp_sku(RAM, "N1Standard", 0.004237),
    gcp_sku("Spot Preemptible " + CORE, "N1Standard", 0.00698, usage="Preemptible"),
    gcp_sku("Spot Preemptible " + RAM, "N1Standard", 0.00094, usage="Preemptible"),
    gcp_sku("Commitment v1: N1 Cpu in Americas", "N1Standard", 0.02, usage="Commit1Yr"),
    gcp_sku(T4, "GPU", 9.99, regions=("europe-west4",)),
]


def test_gcp_skus_give_gpu_and_n1_rates_of_the_region() -> None:
    rates = gcp_rates(SKUS, "us-central1")
    assert rates.gpus == {
        "nvidia-tesla-t4": {"on_demand": 0.35, "spot": 0.11},
        "nvidia-a100-80gb": {"on_demand": 3.93},
    }
    assert rates.n1_core == {"on_demand": 0.031611, "spot": 0.00698}
    assert rates.n1_ram == {"on_demand": 0.004237, "spot": 0.00094}


def test_refresh_replaces_the_priced_rows_and_says_which_were_kept() -> None:
    table = price_table()
    out = refresh_table(
        table,
        as_of="2026-12-07",
        aws_on_demand={"g5.xlarge": 1.1},
        aws_spot={"g5.xlarge": 0.45},
        gcp=gcp_rates(SKUS, "us-central1"),
    )
    new = out.table
    assert new["aws"]["types"]["g5.xlarge"] == {"on_demand": 1.1, "spot": 0.45}
    assert new["aws"]["types"]["g4dn.xlarge"] == table["aws"]["types"]["g4dn.xlarge"]
    assert "aws g4dn.xlarge spot: no spot price history" in out.kept
    assert "spot_price_history" in new["aws"]["spot_source"]
    assert (
        new["aws"]["as_of"] == "2026-12-07" and "Price List API" in new["aws"]["on_demand_source"]
    )
    assert "aws g5.xlarge on_demand: 1.006 -> 1.1" in out.changed
    assert any(k.startswith("aws g4dn.xlarge: not in") for k in out.kept)
    # n1-standard-8: 8 vCPUs and 30 GiB, by hand
    assert new["gcp"]["machine_types"]["n1-standard-8"]["on_demand"] == pytest.approx(
        8 * 0.031611 + 30 * 0.004237, abs=1e-6
    )
    assert new["gcp"]["machine_types"]["n1-standard-8"]["spot"] == pytest.approx(
        8 * 0.00698 + 30 * 0.00094, abs=1e-6
    )
    assert new["gcp"]["accelerators"]["nvidia-tesla-t4"] == {"on_demand": 0.35, "spot": 0.11}
    assert "gcp a2-highgpu-1g: priced per machine family, not refreshed" in out.kept
    assert "gcp nvidia-tesla-v100 on_demand: no SKU" in out.kept
    assert (
        new["gcp"]["machine_types"]["a2-highgpu-1g"]
        == table["gcp"]["machine_types"]["a2-highgpu-1g"]
    )
    assert table["aws"]["types"]["g5.xlarge"]["on_demand"] == 1.006  # the input is untouched
