"""`python -m provisioners.price_fetch` against wire-level fakes of AWS's Price List API and
GCP's Cloud Billing Catalog, moto's EC2 spot price history, and the master reading the table
it wrote (DET_PRICE_TABLE)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from provisioners import prices
from provisioners.price_fetch import main
from tests.provisioners.test_price_sources import SKUS
from tests.support.fake_pricing import FakeAwsPricing, FakeGcpCatalog, aws_item
from tests.support.moto_server import MotoEc2, fresh_moto


@pytest.fixture
def moto_ec2(monkeypatch: pytest.MonkeyPatch) -> MotoEc2:
    return fresh_moto(monkeypatch)


@pytest.fixture(autouse=True)
def fresh_table(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.delenv(prices.PRICE_TABLE_ENV, raising=False)
    monkeypatch.delenv("GOOGLE_OAUTH_ACCESS_TOKEN", raising=False)
    prices.price_table.cache_clear()
    yield
    prices.price_table.cache_clear()


def test_both_clouds_refresh_the_table_and_the_master_reads_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    moto_ec2: MotoEc2,
) -> None:
    items = [
        aws_item("g5.xlarge", 1.1),
        aws_item("g5.xlarge", 9.9, region="eu-west-1"),
        aws_item("g5.xlarge", 2.2, operatingSystem="Windows"),
        aws_item("p3.2xlarge", 3.5),
        aws_item("g4dn.xlarge", 0.6),
    ]
    out = tmp_path / "prices.json"
    assert prices.aws_price("g5.xlarge") == prices.Price(1.006, 0.4)  # the packaged table
    with FakeAwsPricing(items) as aws, FakeGcpCatalog(SKUS, key="k1") as gcp:
        argv = ["--aws", "--gcp", "--out", str(out), "--aws-endpoint", aws.endpoint]
        argv += ["--ec2-endpoint", moto_ec2.endpoint]
        assert main([*argv, "--gcp-endpoint", gcp.endpoint, "--gcp-api-key", "k1"]) == 0
    # one GetProducts per listed type, scoped to the table's region, Linux, shared tenancy
    g5 = [r for r in aws.requests if {"Field": "instanceType", "Type": "TERM_MATCH",
                                      "Value": "g5.xlarge"} in r["Filters"]]  # fmt: skip
    assert len(g5) == 1
    assert {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"} in g5[0]["Filters"]
    # the catalog was read page by page (2 SKUs a page) with the key
    assert len(gcp.requests) == 5 and all(r["key"] == "k1" for r in gcp.requests)
    printed = capsys.readouterr().out
    assert "changed aws g5.xlarge on_demand: 1.006 -> 1.1" in printed
    assert "kept    gcp a2-highgpu-1g" in printed

    written = json.loads(out.read_text())
    assert written["aws"]["types"]["p3.2xlarge"]["on_demand"] == 3.5
    monkeypatch.setenv(prices.PRICE_TABLE_ENV, str(out))
    prices.price_table.cache_clear()
    # moto answers every offered type's spot price as $0.00001 in each zone
    assert prices.aws_price("g5.xlarge") == prices.Price(1.1, 0.00001)
    assert prices.gcp_price("n1-standard-8", "nvidia-tesla-t4", 1) == prices.Price(
        on_demand=pytest.approx(8 * 0.031611 + 30 * 0.004237 + 0.35, abs=1e-6),
        spot=pytest.approx(8 * 0.00698 + 30 * 0.00094 + 0.11, abs=1e-6),
    )


def test_gcp_without_credentials_is_refused_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["--gcp", "--out", str(tmp_path / "x.json"), "--gcp-api-key", ""])
    assert "GOOGLE_API_KEY" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_a_wrong_key_is_the_catalogs_403_and_nothing_is_written(tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    with FakeGcpCatalog(SKUS, key="right") as gcp, pytest.raises(Exception, match="403"):
        main(["--gcp", "--out", str(out), "--gcp-endpoint", gcp.endpoint, "--gcp-api-key", "no"])
    assert not out.exists()


def test_a_table_without_a_cloud_block_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"aws": {"types": {}}}))
    monkeypatch.setenv(prices.PRICE_TABLE_ENV, str(bad))
    with pytest.raises(ValueError, match="'gcp'"):
        prices.price_table()
