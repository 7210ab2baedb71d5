"""The hourly estimate of `up --dry-run`: list prices, unknown types shown as unknown."""

from __future__ import annotations

import pytest

from cli.deploy.aws.cost import EC2_HOURLY, EIP_HOURLY, RDS_HOURLY, estimate


def test_always_on_lines_and_the_elastic_maximum() -> None:
    lines = estimate("m6i.large", "db.m7g.large", 20, "g4dn.xlarge", "m5.xlarge", 4)
    by_item = {line.item: line.hourly for line in lines}
    assert by_item["Elastic IP"] == EIP_HOURLY
    master = by_item["master m6i.large + 50 GiB gp3"]
    assert master is not None and EC2_HOURLY["m6i.large"] < master < EC2_HOURLY["m6i.large"] + 0.01
    database = by_item["database db.m7g.large + 20 GiB"]
    assert database is not None and database > RDS_HOURLY["db.m7g.large"]
    assert by_item["compute pool at most 4 x g4dn.xlarge"] == pytest.approx(
        4 * EC2_HOURLY["g4dn.xlarge"]
    )


def test_an_unknown_type_is_not_guessed() -> None:
    lines = estimate("x9.huge", "db.x9.huge", 20, "zz.metal", "m5.xlarge", 2)
    unknown = [line.item for line in lines if line.hourly is None]
    assert unknown == [
        "master x9.huge + 50 GiB gp3",
        "database db.x9.huge + 20 GiB",
        "compute pool at most 2 x zz.metal",
    ]
