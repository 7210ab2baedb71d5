"""The price table kept in the repository (`provisioners/data/prices.json`), read once.

Offers are ranked and budgeted by these hourly prices unless the pool's config gives a price
for the offer. Each cloud's block says its region, the date and where the numbers came from;
spot prices there are estimates (the clouds change them per zone and over the day).

`DET_PRICE_TABLE` names another table file of the same shape, e.g. one that
`python -m provisioners.price_fetch` wrote from the clouds' price APIs; unset, the packaged
table is read (no network, ever, at run time).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

PRICE_TABLE_ENV = "DET_PRICE_TABLE"


@dataclass(frozen=True)
class Price:
    """On-demand and typical spot USD per hour of one instance."""

    on_demand: float
    spot: float

    def of(self, *, spot: bool) -> float:
        return self.spot if spot else self.on_demand


@cache
def price_table() -> dict[str, Any]:
    """The table in DET_PRICE_TABLE's file when set, else the packaged one."""
    override = os.environ.get(PRICE_TABLE_ENV, "")
    if override:
        text = Path(override).read_text("utf-8")
    else:
        text = resources.files("provisioners").joinpath("data/prices.json").read_text("utf-8")
    table: dict[str, Any] = json.loads(text)
    for cloud in ("aws", "gcp"):
        if not isinstance(table.get(cloud), dict):
            raise ValueError(f"price table {override or 'prices.json'} has no {cloud!r} block")
    return table


def _price(entry: Any) -> Price | None:
    if not isinstance(entry, dict):
        return None
    return Price(on_demand=float(entry["on_demand"]), spot=float(entry["spot"]))


def aws_price(instance_type: str) -> Price | None:
    """The table's price of an EC2 instance type; None for a type it does not list."""
    return _price(price_table()["aws"]["types"].get(instance_type))


def gcp_price(machine_type: str, gpu_type: str, gpu_num: int) -> Price | None:
    """Machine plus attached GPUs (a2/g2 machine prices already include theirs); None if the
    table lacks the machine type or a needed accelerator."""
    gcp = price_table()["gcp"]
    machine = _price(gcp["machine_types"].get(machine_type))
    if machine is None:
        return None
    included = machine_type.startswith(tuple(gcp["accelerators_included_in"]))
    if gpu_num <= 0 or included:
        return machine
    gpu = _price(gcp["accelerators"].get(gpu_type))
    if gpu is None:
        return None
    return Price(
        on_demand=machine.on_demand + gpu_num * gpu.on_demand,
        spot=machine.spot + gpu_num * gpu.spot,
    )
