"""Wire-level fakes of the clouds' price APIs on 127.0.0.1 (moto serves no Price List API).

- `FakeAwsPricing`: AWS Price List `GetProducts` as boto3 sends it (JSON 1.1: POST / with
  `X-Amz-Target: AWSPriceListService.GetProducts`), TERM_MATCH filters on the product's
  attributes, `MaxResults`/`NextToken` paging, PriceList items as JSON strings.
- `FakeGcpCatalog`: Cloud Billing Catalog `GET /v1/services/{service}/skus` with `key`
  required (403 without), `pageSize`/`pageToken` paging.

`aws_item` and `gcp_sku` build items of the APIs' real shapes. `requests` records each call.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def aws_item(instance_type: str, usd: float, *, region: str = "us-east-1", **attrs: str) -> str:
    sku = f"SKU{abs(hash((instance_type, region, tuple(attrs.items())))) % 10**8}"
    attributes = {
        "instanceType": instance_type,
        "regionCode": region,
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        **attrs,
    }
    dimension = {
        "unit": "Hrs",
        "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
        "pricePerUnit": {"USD": f"{usd:.10f}"},
    }
    term = {"priceDimensions": {f"{sku}.JRTCKXETXF.6YS6EN2CT7": dimension}, "sku": sku}
    return json.dumps(
        {
            "product": {"productFamily": "Compute Instance", "attributes": attributes, "sku": sku},
            "serviceCode": "AmazonEC2",
            "terms": {"OnDemand": {f"{sku}.JRTCKXETXF": term}},
        }
    )


def gcp_sku(
    description: str, group: str, usd: float, *, usage: str = "OnDemand", regions=("us-central1",)
) -> dict[str, Any]:
    units, nanos = int(usd), round((usd - int(usd)) * 1e9)
    return {
        "name": f"services/6F81-5844-456A/skus/{abs(hash(description)) % 10**8:08X}",
        "description": description,
        "category": {
            "serviceDisplayName": "Compute Engine",
            "resourceFamily": "Compute",
            "resourceGroup": group,
            "usageType": usage,
        },
        "serviceRegions": list(regions),
        "pricingInfo": [
            {
                "pricingExpression": {
                    "usageUnit": "h",
                    "tieredRates": [
                        {"startUsageAmount": 0, "unitPrice": {"currencyCode": "USD",
                                                              "units": str(units),
                                                              "nanos": nanos}}
                    ],
                }
            }
        ],
    }  # fmt: skip


class _Server:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def answer(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, Any]:
        raise NotImplementedError

    def __enter__(self) -> Any:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, answer = fake.answer(method, self.path, self.headers, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


class FakeAwsPricing(_Server):
    def __init__(self, items: list[str], page_size: int = 2) -> None:
        super().__init__()
        self.items, self.page_size = items, page_size

    def answer(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, Any]:
        target = headers.get("X-Amz-Target", "")
        request = json.loads(body or b"{}")
        self.requests.append({"target": target, **request})
        if method != "POST" or target != "AWSPriceListService.GetProducts":
            return 400, {"__type": "UnknownOperationException", "message": target}
        if request.get("ServiceCode") != "AmazonEC2":
            return 400, {"__type": "InvalidParameterException", "message": "ServiceCode"}
        wanted = {f["Field"]: f["Value"] for f in request.get("Filters", [])}
        matches = [
            item
            for item in self.items
            if all(
                json.loads(item)["product"]["attributes"].get(field) == value
                for field, value in wanted.items()
            )
        ]
        start = int(request.get("NextToken") or 0)
        size = min(int(request.get("MaxResults") or self.page_size), self.page_size)
        page: dict[str, Any] = {
            "FormatVersion": "aws_v1",
            "PriceList": matches[start : start + size],
        }
        if start + size < len(matches):
            page["NextToken"] = str(start + size)
        return 200, page


class FakeGcpCatalog(_Server):
    def __init__(self, skus: list[dict[str, Any]], key: str = "test-key", page_size: int = 2):
        super().__init__()
        self.skus, self.key, self.page_size = skus, key, page_size

    def answer(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, Any]:
        url = urllib.parse.urlsplit(path)
        query = dict(urllib.parse.parse_qsl(url.query))
        self.requests.append({"path": url.path, **query})
        if url.path != "/v1/services/6F81-5844-456A/skus":
            return 404, {"error": {"code": 404, "message": url.path, "status": "NOT_FOUND"}}
        if query.get("key") != self.key:
            return 403, {
                "error": {"code": 403, "message": "API key", "status": "PERMISSION_DENIED"}
            }
        start = int(query.get("pageToken") or 0)
        size = min(int(query.get("pageSize") or self.page_size), self.page_size)
        page: dict[str, Any] = {"skus": self.skus[start : start + size], "nextPageToken": ""}
        if start + size < len(self.skus):
            page["nextPageToken"] = str(start + size)
        return 200, page
