"""The clouds' price APIs, read into our price table (pure: JSON in, table out).

- AWS Price List API (`pricing.get_products`, service AmazonEC2): each PriceList item is a JSON
  string with `product.attributes` (instanceType, regionCode, operatingSystem, tenancy,
  preInstalledSw, capacitystatus) and `terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD`.
  It has no spot prices; those come from EC2's `describe_spot_price_history` (Linux/UNIX): the
  newest price in each availability zone, averaged over the zones (`aws_spot_prices`).
- GCP Cloud Billing Catalog (`services/6F81-5844-456A/skus`, Compute Engine): per-hour SKUs for
  GPUs ("Nvidia Tesla T4 GPU running in Americas", "... attached to Spot Preemptible VMs ...")
  and for N1 cores and memory, priced per vCPU-hour and GiB-hour; an n1-standard-N machine is N
  vCPUs and 3.75 x N GiB, an n1-highmem-N 6.5 x N GiB. Other machine families keep their rows.

`refresh_table` returns the new table and a list of what changed and what was left alone, so a
refresh says plainly which rows came from the API and which did not.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

GCP_COMPUTE_SERVICE = "6F81-5844-456A"
# GPU model in a SKU's description -> our accelerator name (config_gcp.GPU_COUNTS's keys)
_GCP_GPUS = {
    "Nvidia Tesla T4": "nvidia-tesla-t4",
    "Nvidia Tesla P100": "nvidia-tesla-p100",
    "Nvidia Tesla P4": "nvidia-tesla-p4",
    "Nvidia Tesla V100": "nvidia-tesla-v100",
    "Nvidia Tesla A100 80GB": "nvidia-a100-80gb",
    "Nvidia Tesla A100": "nvidia-tesla-a100",
    "Nvidia L4": "nvidia-l4",
}
_N1_MEMORY_PER_CPU = {"n1-standard": 3.75, "n1-highmem": 6.5, "n1-highcpu": 0.9}
_MACHINE = re.compile(r"^(?P<family>n1-(standard|highmem|highcpu))-(?P<cpus>\d+)$")
# Billing regions in SKU descriptions ("running in Americas") are broader than a region: a
# SKU must also list the table's region in serviceRegions.


@dataclass
class Refresh:
    table: dict[str, Any]
    changed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def aws_on_demand_prices(price_list: Iterable[str | Mapping[str, Any]]) -> dict[str, float]:
    """instance type -> on-demand USD/h of Linux, shared tenancy, no pre-installed software."""
    prices: dict[str, float] = {}
    for item in price_list:
        data = json.loads(item) if isinstance(item, str) else item
        attrs = data.get("product", {}).get("attributes", {})
        if (
            attrs.get("operatingSystem") != "Linux"
            or attrs.get("tenancy") != "Shared"
            or attrs.get("preInstalledSw", "NA") != "NA"
            or attrs.get("capacitystatus", "Used") != "Used"
            or not attrs.get("instanceType")
        ):
            continue
        usd = _aws_hourly(data.get("terms", {}).get("OnDemand", {}))
        if usd is not None and usd > 0:
            prices[attrs["instanceType"]] = usd
    return prices


def _aws_hourly(on_demand: Mapping[str, Any]) -> float | None:
    for term in on_demand.values():
        for dimension in term.get("priceDimensions", {}).values():
            if dimension.get("unit") in ("Hrs", "Hours"):
                try:
                    return float(dimension["pricePerUnit"]["USD"])
                except (KeyError, TypeError, ValueError):
                    return None
    return None


def aws_spot_prices(history: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """instance type -> the mean over its zones of each zone's newest spot price."""
    newest: dict[tuple[str, str], tuple[Any, float]] = {}
    for entry in history:
        try:
            key = (str(entry["InstanceType"]), str(entry["AvailabilityZone"]))
            price, stamp = float(entry["SpotPrice"]), entry.get("Timestamp", "")
        except (KeyError, TypeError, ValueError):
            continue
        if price > 0 and (key not in newest or str(stamp) > str(newest[key][0])):
            newest[key] = (stamp, price)
    by_type: dict[str, list[float]] = {}
    for (instance_type, _), (_, price) in newest.items():
        by_type.setdefault(instance_type, []).append(price)
    return {t: sum(p) / len(p) for t, p in by_type.items()}


@dataclass(frozen=True)
class GcpRates:
    """Per-hour USD of each GPU and of an N1 vCPU and GiB, on-demand and spot."""

    gpus: dict[str, dict[str, float]]
    n1_core: dict[str, float]
    n1_ram: dict[str, float]


def gcp_rates(skus: Iterable[Mapping[str, Any]], region: str) -> GcpRates:
    gpus: dict[str, dict[str, float]] = {}
    core: dict[str, float] = {}
    ram: dict[str, float] = {}
    for sku in skus:
        if region not in sku.get("serviceRegions", ()):
            continue
        category = sku.get("category", {})
        market = {"OnDemand": "on_demand", "Preemptible": "spot"}.get(category.get("usageType"))
        price = _gcp_unit_price(sku)
        if market is None or price is None:
            continue
        text = sku.get("description", "")
        if category.get("resourceGroup") == "GPU":
            name = _gcp_gpu(text)
            if name is not None:
                gpus.setdefault(name, {})[market] = price
        elif category.get("resourceGroup") == "N1Standard" and "Custom" not in text:
            if "Core" in text:
                core[market] = price
            elif "Ram" in text:
                ram[market] = price
    return GcpRates(gpus, core, ram)


def _gcp_gpu(description: str) -> str | None:
    # Longest model name first: "A100 80GB" before "A100".
    for model in sorted(_GCP_GPUS, key=len, reverse=True):
        if description.startswith(model + " GPU"):
            return _GCP_GPUS[model]
    return None


def _gcp_unit_price(sku: Mapping[str, Any]) -> float | None:
    try:
        expression = sku["pricingInfo"][-1]["pricingExpression"]
        if expression.get("usageUnit") != "h":
            return None
        unit = expression["tieredRates"][-1]["unitPrice"]
        return int(unit.get("units") or 0) + int(unit.get("nanos") or 0) / 1e9
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def refresh_table(
    table: Mapping[str, Any],
    *,
    as_of: str,
    aws_on_demand: Mapping[str, float] | None = None,
    aws_spot: Mapping[str, float] | None = None,
    gcp: GcpRates | None = None,
) -> Refresh:
    """The table with the rows the APIs priced replaced; every other row is kept."""
    out = Refresh(copy.deepcopy(dict(table)))
    if aws_spot is not None:
        aws = out.table["aws"]
        for name, row in aws["types"].items():
            if name in aws_spot:
                _set(out, f"aws {name} spot", row, "spot", aws_spot[name])
            else:
                out.kept.append(f"aws {name} spot: no spot price history")
        aws["spot_source"] = (
            f"EC2 describe_spot_price_history (Linux/UNIX), newest price per zone averaged over "
            f"{aws['region']}'s zones, read {as_of}"
        )
    if aws_on_demand is not None:
        aws = out.table["aws"]
        for name, row in aws["types"].items():
            if name in aws_on_demand:
                _set(out, f"aws {name} on_demand", row, "on_demand", aws_on_demand[name])
            else:
                out.kept.append(f"aws {name}: not in the Price List answer")
        aws["as_of"] = as_of
        aws["on_demand_source"] = (
            f"AWS Price List API (pricing.get_products, AmazonEC2, Linux, shared tenancy), "
            f"{aws['region']}, read {as_of}"
        )
    if gcp is not None:
        _refresh_gcp(out, gcp, as_of)
    return out


def _refresh_gcp(out: Refresh, rates: GcpRates, as_of: str) -> None:
    gcp = out.table["gcp"]
    for name, row in gcp["accelerators"].items():
        for market in ("on_demand", "spot"):
            price = rates.gpus.get(name, {}).get(market)
            if price is None:
                out.kept.append(f"gcp {name} {market}: no SKU")
            else:
                _set(out, f"gcp {name} {market}", row, market, price)
    for name, row in gcp["machine_types"].items():
        match = _MACHINE.match(name)
        if match is None:
            out.kept.append(f"gcp {name}: priced per machine family, not refreshed")
            continue
        cpus = int(match["cpus"])
        gib = cpus * _N1_MEMORY_PER_CPU[match["family"]]
        for market in ("on_demand", "spot"):
            if market in rates.n1_core and market in rates.n1_ram:
                price = cpus * rates.n1_core[market] + gib * rates.n1_ram[market]
                _set(out, f"gcp {name} {market}", row, market, price)
            else:
                out.kept.append(f"gcp {name} {market}: no N1 core/RAM SKU")
    gcp["as_of"] = as_of
    source = f"Cloud Billing Catalog API (services/{GCP_COMPUTE_SERVICE}/skus), {gcp['region']}"
    gcp["on_demand_source"] = f"{source}, read {as_of}"
    gcp["spot_source"] = f"{source} (Spot Preemptible SKUs), read {as_of}"


def _set(out: Refresh, what: str, row: dict[str, Any], key: str, price: float) -> None:
    price = round(price, 6)
    if row.get(key) != price:
        out.changed.append(f"{what}: {row.get(key)} -> {price}")
    row[key] = price
