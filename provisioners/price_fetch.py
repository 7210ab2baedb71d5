"""`python -m provisioners.price_fetch`: rewrite a price table from the clouds' price APIs.

    python -m provisioners.price_fetch --aws --gcp --out /etc/determined/prices.json
    DET_PRICE_TABLE=/etc/determined/prices.json determined-master ...

Reads the table the master uses now (DET_PRICE_TABLE, else the packaged
provisioners/data/prices.json), asks AWS's Price List API (boto3 `pricing.get_products`, one
call per instance type the table lists) and EC2's spot price history (with the usual AWS
credentials) and/or GCP's Cloud
Billing Catalog (an API key in --gcp-api-key or GOOGLE_API_KEY, or an OAuth token in
GOOGLE_OAUTH_ACCESS_TOKEN), and writes the refreshed table to --out, printing what changed and
which rows were left as they were. The parsing is provisioners.price_sources (pure).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from provisioners.price_sources import (
    GCP_COMPUTE_SERVICE,
    aws_on_demand_prices,
    aws_spot_prices,
    gcp_rates,
    refresh_table,
)
from provisioners.prices import price_table

AWS_PRICING_REGION = "us-east-1"  # the Price List API answers from us-east-1 (and two others)
GCP_BILLING_ENDPOINT = "https://cloudbilling.googleapis.com"
TIMEOUT_S = 60.0


def fetch_aws_on_demand(
    instance_types: Sequence[str], region: str, *, endpoint_url: str | None = None
) -> dict[str, float]:
    import boto3  # only when asked: the master never imports this module

    client = boto3.client("pricing", region_name=AWS_PRICING_REGION, endpoint_url=endpoint_url)
    paginator = client.get_paginator("get_products")
    items: list[str] = []
    for instance_type in instance_types:
        filters = [
            ("regionCode", region),
            ("instanceType", instance_type),
            ("operatingSystem", "Linux"),
            ("tenancy", "Shared"),
            ("preInstalledSw", "NA"),
            ("capacitystatus", "Used"),
        ]
        for page in paginator.paginate(
            ServiceCode="AmazonEC2",
            Filters=[{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in filters],
        ):
            items.extend(page.get("PriceList", []))
    return aws_on_demand_prices(items)


def fetch_aws_spot(
    instance_types: Sequence[str], region: str, *, endpoint_url: str | None = None
) -> dict[str, float]:
    import boto3

    client = boto3.client("ec2", region_name=region, endpoint_url=endpoint_url)
    paginator = client.get_paginator("describe_spot_price_history")
    history: list[dict[str, Any]] = []
    # From now: AWS answers the price in effect now in each zone (and nothing older).
    for page in paginator.paginate(
        InstanceTypes=list(instance_types),
        ProductDescriptions=["Linux/UNIX"],
        StartTime=datetime.now(UTC),
    ):
        history.extend(page.get("SpotPriceHistory", []))
    return aws_spot_prices(history)


def fetch_gcp_skus(
    *, endpoint: str = GCP_BILLING_ENDPOINT, api_key: str = "", token: str = ""
) -> Iterator[dict[str, Any]]:
    """Every SKU of Compute Engine in the catalog, page by page."""
    page_token = ""
    while True:
        query = {"currencyCode": "USD", "pageSize": "5000"}
        if api_key:
            query["key"] = api_key
        if page_token:
            query["pageToken"] = page_token
        url = f"{endpoint}/v1/services/{GCP_COMPUTE_SERVICE}/skus?{urllib.parse.urlencode(query)}"
        request = urllib.request.Request(url)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            page = json.loads(answer.read())
        yield from page.get("skus", [])
        page_token = page.get("nextPageToken", "")
        if not page_token:
            return


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m provisioners.price_fetch", description=__doc__)
    p.add_argument("--out", type=Path, required=True, help="where to write the refreshed table")
    p.add_argument("--aws", action="store_true", help="refresh AWS on-demand and spot prices")
    p.add_argument("--gcp", action="store_true", help="refresh GCP GPU and N1 prices")
    p.add_argument("--aws-endpoint", default=None, help="Price List API endpoint (tests)")
    p.add_argument("--ec2-endpoint", default=None, help="EC2 endpoint for spot prices (tests)")
    p.add_argument("--gcp-endpoint", default=GCP_BILLING_ENDPOINT, help="Cloud Billing endpoint")
    p.add_argument("--gcp-api-key", default=os.environ.get("GOOGLE_API_KEY", ""))
    args = p.parse_args(argv)
    if not (args.aws or args.gcp):
        p.error("say which cloud to ask: --aws and/or --gcp")
    table = price_table()
    aws = spot = gcp = None
    if args.aws:
        types, region = sorted(table["aws"]["types"]), table["aws"]["region"]
        aws = fetch_aws_on_demand(types, region, endpoint_url=args.aws_endpoint)
        spot = fetch_aws_spot(types, region, endpoint_url=args.ec2_endpoint)
    if args.gcp:
        token = os.environ.get("GOOGLE_OAUTH_ACCESS_TOKEN", "")
        if not (args.gcp_api_key or token):
            p.error("--gcp needs --gcp-api-key, GOOGLE_API_KEY or GOOGLE_OAUTH_ACCESS_TOKEN")
        skus = fetch_gcp_skus(endpoint=args.gcp_endpoint, api_key=args.gcp_api_key, token=token)
        gcp = gcp_rates(skus, table["gcp"]["region"])
    as_of = datetime.now(UTC).date().isoformat()
    refreshed = refresh_table(table, as_of=as_of, aws_on_demand=aws, aws_spot=spot, gcp=gcp)
    args.out.write_text(json.dumps(refreshed.table, indent=2) + "\n", "utf-8")
    print(f"wrote {args.out}: {len(refreshed.changed)} price(s) changed")
    for line in refreshed.changed:
        print(f"  changed {line}")
    for line in refreshed.kept:
        print(f"  kept    {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
